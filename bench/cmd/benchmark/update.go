package main

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// splice updates doc (docs/benchmarks.md) with the sections of part (what a run with -only
// rendered): a section of doc with the same title is replaced, a new one goes before the first
// section of doc with a higher number (or at the end), every other section and doc's header stay
// as they are. A section runs from its "## " heading to the next; titles match without their
// number, so a renumbered section still replaces its old self. note goes under each spliced
// heading, since those rows were measured apart from the rest of doc. Inside a replaced section,
// the table rows of parts that did not run (ran says which did) are kept (see mergeRows), with the
// notes of the runs that measured them.
func splice(doc, part []byte, note string, ran map[string]bool) []byte {
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
			text, kept := mergeRows(s.text, u.text, ran)
			write(annotate(text, strings.Join(append([]string{note}, keptNotes(s.text, kept)...), "\n\n> ")))
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

// onlyPart finds the part a table row was measured by, in its command: "-only NAME" for the
// program's own parts, the `go test` arguments for a Go benchmark's; "" when it names none.
var onlyPart = regexp.MustCompile(`-only ([a-z0-9,-]+)`)

func partOf(row string) string {
	if m := onlyPart.FindStringSubmatch(row); m != nil {
		return m[1]
	}
	for name, g := range goBenches() {
		if strings.Contains(row, strings.Join(quoteArgs(g.Args), " ")+"`") {
			return name
		}
	}
	return ""
}

// firstCell is a table row's first column: a row's identity across runs when its part did not
// run (a goal's text, for a goals table that lists every goal whether measured or not).
func firstCell(row string) string {
	cells := strings.Split(strings.Trim(strings.TrimSpace(row), "|"), "|")
	return strings.TrimSpace(cells[0])
}

// table is one markdown table of a section: its header line (the identity across runs) and body
// rows, and where it sits in the section's lines.
type table struct {
	header     string
	start, end int // lines[start] is the header, lines[start+2:end] the rows
}

func tables(lines []string) []table {
	var ts []table
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "|") {
			continue
		}
		j := i
		for j < len(lines) && strings.HasPrefix(lines[j], "|") {
			j++
		}
		if j-i >= 2 {
			ts = append(ts, table{header: lines[i], start: i, end: j})
		}
		i = j
	}
	return ts
}

// mergeRows returns fresh (a section this run rendered) with the rows of old (the section it
// replaces) that belong to parts this run did not run: a fresh row of such a part (a goal row
// that says "not run") gives way to the old row with the same first cell, and the old rows of
// such parts that fresh has no row for are added, in the order of allParts. So a run of one part
// no longer drops the rows of the others until the next full make bench. kept is the parts whose
// old rows remain.
func mergeRows(old, fresh []byte, ran map[string]bool) (merged []byte, kept map[string]bool) {
	kept = map[string]bool{}
	if ran == nil {
		return fresh, kept
	}
	oldLines := strings.SplitAfter(string(old), "\n")
	oldTables := map[string][]string{}
	for _, t := range tables(oldLines) {
		if _, dup := oldTables[t.header]; !dup {
			oldTables[t.header] = oldLines[t.start+2 : t.end]
		}
	}
	lines := strings.SplitAfter(string(fresh), "\n")
	var out []string
	at := 0
	for _, t := range tables(lines) {
		out = append(out, lines[at:t.start+2]...)
		at = t.end
		olds, used := oldTables[t.header], map[int]bool{}
		var rows []string
		firsts := map[string]bool{}
		for _, row := range lines[t.start+2 : t.end] {
			firsts[firstCell(row)] = true
			if p := partOf(row); p != "" && !ran[p] {
				if i := slices.IndexFunc(olds, func(o string) bool { return firstCell(o) == firstCell(row) }); i >= 0 {
					row, used[i] = olds[i], true
					kept[partOf(row)] = true
				}
			}
			rows = append(rows, row)
		}
		added := false
		for i, o := range olds {
			if p := partOf(o); p != "" && !ran[p] && !used[i] && !firsts[firstCell(o)] {
				rows, kept[p], added = append(rows, o), true, true
			}
		}
		if added {
			slices.SortStableFunc(rows, func(a, b string) int { return partIndex(a) - partIndex(b) })
		}
		out = append(out, rows...)
	}
	out = append(out, lines[at:]...)
	return []byte(strings.Join(out, "")), kept
}

// partIndex orders rows by their part's place in allParts (a list of parts by its first).
func partIndex(row string) int {
	p, _, _ := strings.Cut(partOf(row), ",")
	if i := slices.Index(allParts, p); i >= 0 {
		return i
	}
	return len(allParts)
}

// keptNotes are the "measured apart" notes under old's heading whose -only list names a part of
// kept: the runs that measured the rows mergeRows kept.
func keptNotes(old []byte, kept map[string]bool) []string {
	var notes []string
	for _, l := range strings.Split(string(old), "\n") {
		note, ok := strings.CutPrefix(l, "> ")
		if !ok || !strings.HasPrefix(note, "Measured apart") {
			continue
		}
		if m := onlyPart.FindStringSubmatch(note); m != nil &&
			slices.ContainsFunc(strings.Split(m[1], ","), func(p string) bool { return kept[p] }) {
			notes = append(notes, note)
		}
	}
	return notes
}
