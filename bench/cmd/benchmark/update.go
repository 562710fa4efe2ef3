package main

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// splice updates doc (docs/benchmarks.md) with the sections of part (what a run with -only
// rendered): a section of doc with the same title is replaced, a new one goes before the first
// section of doc with a higher number (or at the end), every other section and doc's header stay
// as they are. A section runs from its "## " heading to the next; titles match without their
// number, so a renumbered section still replaces its old self. note goes under each spliced
// heading, since those rows were measured apart from the rest of doc.
func splice(doc, part []byte, note string) []byte {
	head, sections := splitSections(doc)
	_, updates := splitSections(part)
	var fresh []section // updates doc has no section for, in part's order
	for _, u := range updates {
		if _, ok := find(sections, u.title); !ok {
			fresh = append(fresh, u)
		}
	}
	out := bytes.NewBuffer(nil)
	out.Write(head)
	write := func(text []byte) { // a blank line before every heading, as markdown wants
		if out.Len() > 0 && !bytes.HasSuffix(out.Bytes(), []byte("\n\n")) {
			out.WriteString("\n")
		}
		out.Write(text)
	}
	for _, s := range sections {
		for len(fresh) > 0 && fresh[0].number >= 0 && s.number > fresh[0].number {
			write(annotate(fresh[0].text, note))
			fresh = fresh[1:]
		}
		if u, ok := find(updates, s.title); ok {
			write(annotate(u.text, note))
			continue
		}
		write(s.text)
	}
	for _, u := range fresh {
		write(annotate(u.text, note))
	}
	return out.Bytes()
}

type section struct {
	title  string // the heading without "## " and its "N. " number
	number int    // that number, -1 if the heading has none
	text   []byte // heading line to the next heading, trailing blank lines included
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
			t, n := title(string(l))
			sections = append(sections, section{title: t, number: n})
			cur = &sections[len(sections)-1].text
		}
		*cur = append(*cur, l...)
	}
	return head, sections
}

// title is a heading's text without "## " and a leading "7. " number, and that number (-1: none).
func title(heading string) (string, int) {
	t := strings.TrimSpace(strings.TrimPrefix(heading, "## "))
	if n, rest, ok := strings.Cut(t, ". "); ok {
		if v, err := strconv.Atoi(n); err == nil && v >= 0 {
			return rest, v
		}
	}
	return t, -1
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
