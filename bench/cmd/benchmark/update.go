package main

import (
	"bytes"
	"fmt"
	"strings"
)

// splice updates doc (docs/benchmarks.md) with the sections of part (what a run with -only
// rendered): a section of doc with the same title is replaced, a new one is appended, every other
// section and doc's header stay as they are. A section runs from its "## " heading to the next;
// titles match without their number, so a renumbered section still replaces its old self. note
// goes under each spliced heading, since those rows were measured apart from the rest of doc.
func splice(doc, part []byte, note string) []byte {
	head, sections := splitSections(doc)
	_, updates := splitSections(part)
	out := bytes.NewBuffer(nil)
	out.Write(head)
	used := map[string]bool{}
	for _, s := range sections {
		if u, ok := find(updates, s.title); ok {
			out.Write(annotate(u.text, note))
			used[s.title] = true
			continue
		}
		out.Write(s.text)
	}
	for _, u := range updates {
		if !used[u.title] {
			if out.Len() > 0 && !bytes.HasSuffix(out.Bytes(), []byte("\n\n")) {
				out.WriteString("\n")
			}
			out.Write(annotate(u.text, note))
		}
	}
	return out.Bytes()
}

type section struct {
	title string // the heading without "## " and its "N. " number
	text  []byte // heading line to the next heading, trailing blank lines included
}

// splitSections cuts markdown at its "## " headings (outside fenced code blocks).
func splitSections(doc []byte) (head []byte, sections []section) {
	lines := bytes.SplitAfter(doc, []byte("\n"))
	cur := &head
	fenced := false
	for _, l := range lines {
		if bytes.HasPrefix(l, []byte("```")) {
			fenced = !fenced
		}
		if !fenced && bytes.HasPrefix(l, []byte("## ")) {
			sections = append(sections, section{title: title(string(l))})
			cur = &sections[len(sections)-1].text
		}
		*cur = append(*cur, l...)
	}
	return head, sections
}

// title is a heading's text without "## " and a leading "7. " number.
func title(heading string) string {
	t := strings.TrimSpace(strings.TrimPrefix(heading, "## "))
	if n, rest, ok := strings.Cut(t, ". "); ok && strings.Trim(n, "0123456789") == "" && n != "" {
		return rest
	}
	return t
}

func find(sections []section, title string) (section, bool) {
	for _, s := range sections {
		if s.title == title {
			return s, true
		}
	}
	return section{}, false
}

// annotate puts note, as a quote, right under the section's heading.
func annotate(text []byte, note string) []byte {
	heading, rest, _ := bytes.Cut(text, []byte("\n"))
	rest = bytes.TrimLeft(rest, "\n")
	return fmt.Appendf(nil, "%s\n\n> %s\n\n%s", heading, note, rest)
}
