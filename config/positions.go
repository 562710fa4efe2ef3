package config

import (
	"bytes"
	"errors"
	"regexp"
	"sort"
	"strconv"
	"strings"

	toml "github.com/pelletier/go-toml/v2"
	"github.com/pelletier/go-toml/v2/unstable"
	yaml "go.yaml.in/yaml/v3"
)

// koanf hands over plain maps, so positions come from a second pass with the parsers' own ASTs
// (the same parsers koanf uses). A path is the dotted key with list indices: "target.1.max_runners".

type position struct{ Line, Col int }

// positions maps a dotted path to where its key (or, for list elements, the element) starts.
type positions map[string]position

// find returns the position of path or of its nearest ancestor present in the file (a missing key
// is reported at the table that should hold it), else the top of the file.
func (ps positions) find(path string) position {
	for {
		if p, ok := ps[path]; ok {
			return p
		}
		i := strings.LastIndexByte(path, '.')
		if i < 0 {
			return position{1, 1}
		}
		path = path[:i]
	}
}

func joinPath(prefix, key string) string {
	if prefix == "" {
		return key
	}
	return prefix + "." + key
}

// lineIndex turns byte offsets into 1-based line and column (in bytes, as go-toml counts them)
// by a binary search over the line starts, found once. go-toml's own Parser.Shape rescans the
// document from its start on every call, which made positions quadratic in the file's size
// (62 s for 10,000 targets; BenchmarkValidate in bench/ keeps the cost linear).
type lineIndex []int // offset of the first byte of each line

func newLineIndex(data []byte) lineIndex {
	starts := lineIndex{0}
	for i := 0; ; {
		j := bytes.IndexByte(data[i:], '\n')
		if j < 0 {
			return starts
		}
		i += j + 1
		starts = append(starts, i)
	}
}

func (l lineIndex) at(offset int) position {
	line := sort.Search(len(l), func(i int) bool { return l[i] > offset }) // first start past offset
	return position{line, offset - l[line-1] + 1}
}

// tomlPositions indexes a document that toml.Unmarshal already accepted, in one pass.
func tomlPositions(data []byte) positions {
	ps := positions{}
	var p unstable.Parser
	p.Reset(data)
	lines := newLineIndex(data)
	arrays := map[string]int{} // array-of-tables path -> elements seen so far
	prefix := ""
	pos := func(n *unstable.Node) position { return lines.at(int(n.Raw.Offset)) }
	// resolve turns key parts into a path, descending into the last element of any array of tables
	// on the way, as TOML does for [target.env] after [[target]].
	resolve := func(base string, it unstable.Iterator) (string, *unstable.Node) {
		path, first := base, (*unstable.Node)(nil)
		for it.Next() {
			n := it.Node()
			if first == nil {
				first = n
			}
			path = joinPath(path, string(n.Data))
			if c, ok := arrays[path]; ok && c > 0 && !it.IsLast() {
				path += "." + strconv.Itoa(c-1)
			}
		}
		return path, first
	}
	var value func(path string, n *unstable.Node)
	keyValue := func(base string, kv *unstable.Node) {
		path, first := resolve(base, kv.Key())
		if first != nil {
			ps[path] = pos(first)
		}
		value(path, kv.Value())
	}
	value = func(path string, n *unstable.Node) {
		switch n.Kind {
		case unstable.Array:
			it, i := n.Children(), 0
			for it.Next() {
				c := it.Node()
				if c.Kind == unstable.Comment {
					continue
				}
				el := path + "." + strconv.Itoa(i)
				if c.Kind == unstable.InlineTable {
					if first := c.Child(); first != nil && first.Kind == unstable.KeyValue {
						if k := first.Key(); k.Next() {
							ps[el] = pos(k.Node())
						}
					}
				} else if c.Raw.Length > 0 {
					ps[el] = pos(c)
				}
				value(el, c)
				i++
			}
		case unstable.InlineTable:
			it := n.Children()
			for it.Next() {
				if c := it.Node(); c.Kind == unstable.KeyValue {
					keyValue(path, c)
				}
			}
		}
	}
	for p.NextExpression() {
		e := p.Expression()
		switch e.Kind {
		case unstable.KeyValue:
			keyValue(prefix, e)
		case unstable.Table, unstable.ArrayTable:
			path, first := resolve("", e.Key())
			if e.Kind == unstable.ArrayTable {
				i := arrays[path]
				arrays[path] = i + 1
				path += "." + strconv.Itoa(i)
			}
			if first != nil {
				if _, seen := ps[path]; !seen {
					ps[path] = pos(first)
				}
			}
			prefix = path
		}
	}
	return ps
}

// tomlSyntax positions a toml.Unmarshal failure.
func tomlSyntax(file string, err error) Problem {
	pr := Problem{File: file, Line: 1, Col: 1, Severity: SeverityError, Message: "TOML syntax: " + err.Error()}
	var de *toml.DecodeError
	if errors.As(err, &de) {
		pr.Line, pr.Col = de.Position()
		pr.Message = "TOML syntax: " + de.Error()
		if pr.Line < 1 {
			pr.Line, pr.Col = 1, 1
		}
	}
	return pr
}

// yamlPositions indexes a document that yaml.Unmarshal already accepted.
func yamlPositions(data []byte) positions {
	ps := positions{}
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return ps
	}
	var walk func(path string, n *yaml.Node, depth int)
	walk = func(path string, n *yaml.Node, depth int) {
		if depth > 64 { // anchors can nest without bound; the schema is four levels deep
			return
		}
		switch n.Kind {
		case yaml.AliasNode:
			if n.Alias != nil {
				walk(path, n.Alias, depth+1)
			}
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				k, v := n.Content[i], n.Content[i+1]
				if k.Value == "<<" { // merge key: its entries belong to this mapping
					walk(path, v, depth+1)
					continue
				}
				p := joinPath(path, k.Value)
				if _, seen := ps[p]; !seen {
					ps[p] = position{k.Line, k.Column}
				}
				walk(p, v, depth+1)
			}
		case yaml.SequenceNode:
			for i, c := range n.Content {
				p := path + "." + strconv.Itoa(i)
				ps[p] = position{c.Line, c.Column}
				walk(p, c, depth+1)
			}
		}
	}
	walk("", doc.Content[0], 0)
	return ps
}

var yamlLine = regexp.MustCompile(`line (\d+)(?:, column (\d+))?`)

// yamlParserProblems are the messages of yaml.v3's parser (as opposed to its scanner). For them it
// reports the 0-based line of its mark (it adds one for scanner errors only), so the line is one
// short: "d: [4" on line 7 comes back as "line 6".
var yamlParserProblems = []string{
	"did not find expected <stream-start>", "did not find expected <document start>",
	"did not find expected node content", "did not find expected key",
	"did not find expected '-' indicator", "did not find expected ',' or ']'",
	"did not find expected ',' or '}'", "found duplicate %YAML directive",
	"found incompatible YAML document", "found undefined tag handle", "found duplicate %TAG directive",
}

// yamlSyntax positions a yaml.Unmarshal failure; yaml.v3 reports lines (and sometimes columns)
// only inside its message.
func yamlSyntax(file string, err error) Problem {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	pr := Problem{File: file, Line: 1, Col: 1, Severity: SeverityError, Message: "YAML syntax: " + strings.ReplaceAll(msg, "\n", " ")}
	if strings.Contains(msg, "cannot unmarshal") {
		pr.Message = "YAML: the document must be a mapping of sections such as daemon, github and target"
	}
	if m := yamlLine.FindStringSubmatchIndex(msg); m != nil {
		if !strings.Contains(msg, "cannot unmarshal") {
			pr.Message = "YAML syntax: " + strings.TrimPrefix(strings.ReplaceAll(msg[m[1]:], "\n", " "), ": ")
		}
		m := yamlLine.FindStringSubmatch(msg)
		if l, err := strconv.Atoi(m[1]); err == nil && l > 0 {
			pr.Line = l
			for _, p := range yamlParserProblems {
				if strings.HasSuffix(msg, p) {
					pr.Line = l + 1
					break
				}
			}
		}
		if c, err := strconv.Atoi(m[2]); err == nil && c > 0 {
			pr.Col = c
		}
	}
	return pr
}
