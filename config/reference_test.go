package config

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// referencePage is the configuration reference, whose key tables are
// rendered from the specs of keys.go.
const referencePage = "../docs/configuration.md"

// regenerate is the command that renders the key tables of referencePage
// again.
const regenerate = "go generate ./config (or: go test ./config -run TestReferenceIsGenerated -update)"

// A generated block of the page: a BEGIN line naming the table, the
// rendered key table, an END line.
var beginRe = regexp.MustCompile(`(?m)^<!-- BEGIN GENERATED: keys (.+) -->\n`)

const endLine = "<!-- END GENERATED -->\n"

// genBlock is one generated block of a page: the table it holds and the
// offsets of its content, between the BEGIN and the END line.
type genBlock struct {
	title      string
	start, end int
}

// generatedBlocks finds the generated blocks of page.
func generatedBlocks(page string) ([]genBlock, error) {
	var blocks []genBlock
	for _, m := range beginRe.FindAllStringSubmatchIndex(page, -1) {
		b := genBlock{title: page[m[2]:m[3]], start: m[1]}
		n := strings.Index(page[b.start:], endLine)
		if n < 0 || (n > 0 && page[b.start+n-1] != '\n') {
			return nil, fmt.Errorf("the generated table of %s has no %q line after it", b.title, strings.TrimSpace(endLine))
		}
		b.end = b.start + n
		if next := beginRe.FindStringIndex(page[b.start:b.end]); next != nil {
			return nil, fmt.Errorf("the generated table of %s has no %q line before the next BEGIN line", b.title, strings.TrimSpace(endLine))
		}
		blocks = append(blocks, b)
	}
	return blocks, nil
}

// renderKeyTable renders the key table of sp, as it stands between the
// BEGIN and END lines of its block.
func renderKeyTable(sp *spec) string {
	var b strings.Builder
	b.WriteString("\n| Key | Type | Default | Allowed values |\n| --- | --- | --- | --- |\n")
	for _, k := range sp.keys {
		b.WriteString(renderKeyRow(k))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	return b.String()
}

// renderKeyRow renders the row of one key.
func renderKeyRow(k Key) string {
	return fmt.Sprintf("| `%s` | %s | %s | %s |", k.Name, k.Type, k.Default, k.Allowed)
}

// renderReference returns page with the content of every generated block
// rendered from specs. Every spec needs a block of its own, since only a
// person knows where its prose goes.
func renderReference(page string, specs []*spec) (string, error) {
	blocks, err := generatedBlocks(page)
	if err != nil {
		return "", err
	}
	if probs := blockProblems(blocks, specs); len(probs) > 0 {
		return "", fmt.Errorf("%s", strings.Join(probs, "; "))
	}
	var b strings.Builder
	last := 0
	for _, blk := range blocks {
		b.WriteString(page[last:blk.start])
		b.WriteString(renderKeyTable(specByTitle(specs, blk.title)))
		last = blk.end
	}
	b.WriteString(page[last:])
	return b.String(), nil
}

// blockProblems reports the specs without a block, the blocks without a
// spec, and the specs with more than one block.
func blockProblems(blocks []genBlock, specs []*spec) []string {
	var probs []string
	count := make(map[string]int)
	for _, blk := range blocks {
		count[blk.title]++
		if specByTitle(specs, blk.title) == nil {
			probs = append(probs, fmt.Sprintf("a generated table for %s, which config/keys.go does not have; remove the block", blk.title))
		}
	}
	for _, sp := range specs {
		switch count[sp.title()] {
		case 0:
			probs = append(probs, fmt.Sprintf("no generated table for %s: add the lines <!-- BEGIN GENERATED: keys %s --> and %s where it belongs", sp.title(), sp.title(), strings.TrimSpace(endLine)))
		case 1:
		default:
			probs = append(probs, fmt.Sprintf("%d generated tables for %s; keep one", count[sp.title()], sp.title()))
		}
	}
	return probs
}

func specByTitle(specs []*spec, title string) *spec {
	for _, sp := range specs {
		if sp.title() == title {
			return sp
		}
	}
	return nil
}

// referenceDiffs lists how the generated blocks of page differ from what
// specs render, by table and key; nil when the page is up to date.
func referenceDiffs(page string, specs []*spec) []string {
	blocks, err := generatedBlocks(page)
	if err != nil {
		return []string{err.Error()}
	}
	diffs := blockProblems(blocks, specs)
	for _, blk := range blocks {
		sp := specByTitle(specs, blk.title)
		if sp == nil {
			continue
		}
		got, want := page[blk.start:blk.end], renderKeyTable(sp)
		if got == want {
			continue
		}
		d := rowDiffs(sp, got)
		if len(d) == 0 {
			d = []string{fmt.Sprintf("the table differs outside its key rows:\n%s\nconfig/keys.go renders:\n%s", got, want)}
		}
		for _, s := range d {
			diffs = append(diffs, sp.title()+": "+s)
		}
	}
	return diffs
}

// rowDiffs compares the key rows of a generated block's content with the
// keys of sp: keys missing on either side, rows that differ, the order.
func rowDiffs(sp *spec, content string) []string {
	rows := make(map[string]string)
	var order []string
	for _, l := range strings.Split(content, "\n") {
		if !strings.HasPrefix(l, "| `") {
			continue
		}
		name, _, _ := strings.Cut(strings.TrimPrefix(l, "| `"), "`")
		rows[name] = l
		order = append(order, name)
	}
	var diffs []string
	for _, k := range sp.keys {
		row, ok := rows[k.Name]
		switch {
		case !ok:
			diffs = append(diffs, fmt.Sprintf("key %s is in config/keys.go but not on the page", k.Name))
		case row != renderKeyRow(k):
			diffs = append(diffs, fmt.Sprintf("the row of key %s differs:\n  page:           %s\n  config/keys.go: %s", k.Name, row, renderKeyRow(k)))
		}
	}
	for _, name := range order {
		if !sp.allows(name) {
			diffs = append(diffs, fmt.Sprintf("key %s is on the page but not in config/keys.go", name))
		}
	}
	if len(diffs) == 0 && !slices.Equal(order, sp.names()) {
		diffs = append(diffs, fmt.Sprintf("the keys are in another order: page %s; config/keys.go %s", strings.Join(order, ", "), strings.Join(sp.names(), ", ")))
	}
	return diffs
}

// The key tables of docs/configuration.md are what config/keys.go renders:
// a key added, removed or changed there without regenerating the page fails
// here. go test -update (or go generate) renders them again.
func TestReferenceIsGenerated(t *testing.T) {
	b, err := os.ReadFile(referencePage)
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	if *update {
		out, err := renderReference(page, allSpecs)
		if err != nil {
			t.Fatalf("%s: %v", referencePage, err)
		}
		if out != page {
			if err := os.WriteFile(referencePage, []byte(out), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	diffs := referenceDiffs(page, allSpecs)
	for _, d := range diffs {
		t.Errorf("%s: %s", referencePage, d)
	}
	if len(diffs) > 0 {
		t.Errorf("%s is not what config/keys.go renders; regenerate it: %s", referencePage, regenerate)
	}
}

// withKeys returns a copy of specs in which the spec titled title holds
// keys instead of its own.
func withKeys(specs []*spec, title string, keys []Key) []*spec {
	out := slices.Clone(specs)
	for i, sp := range out {
		if sp.title() == title {
			cp := *sp
			cp.keys = keys
			out[i] = &cp
		}
	}
	return out
}

// A key added to the table, changed or removed, without regenerating,
// makes the test above fail and names the table and key; so does a table
// without a generated block.
func TestReferenceNoticesChanges(t *testing.T) {
	b, err := os.ReadFile(referencePage)
	if err != nil {
		t.Fatal(err)
	}
	page, err := renderReference(string(b), allSpecs)
	if err != nil {
		t.Fatal(err)
	}
	if d := referenceDiffs(page, allSpecs); d != nil {
		t.Fatalf("the rendered page differs from itself: %q", d)
	}

	fake := Key{Name: "fake_key", Type: "string", Default: "none", Allowed: "Nothing."}
	changed := slices.Clone(natsSpec.keys)
	changed[1].Default = "`\"other\"`"
	for _, c := range []struct {
		what  string
		specs []*spec
		want  []string // in the one difference reported
	}{
		{"a key added", withKeys(allSpecs, "[nats]", append(slices.Clone(natsSpec.keys), fake)), []string{"[nats]", "fake_key", "not on the page"}},
		{"a key added to [[output.columns]]", withKeys(allSpecs, "[[output.columns]]", append(slices.Clone(columnSpec.keys), fake)), []string{"[[output.columns]]", "fake_key"}},
		{"a key removed", withKeys(allSpecs, "[rotation]", rotationSpec.keys[1:]), []string{"[rotation]", "max_file_size", "not in config/keys.go"}},
		{"a default changed", withKeys(allSpecs, "[nats]", changed), []string{"[nats]", natsSpec.keys[1].Name, "differs", "other"}},
		{"keys reordered", withKeys(allSpecs, "[state]", []Key{stateSpec.keys[1], stateSpec.keys[0]}), []string{"[state]", "order"}},
		{"a table added", append(slices.Clone(allSpecs), &spec{name: "fake", header: "[fake]", keys: []Key{fake}}), []string{"[fake]", "BEGIN GENERATED"}},
	} {
		t.Run(c.what, func(t *testing.T) {
			diffs := referenceDiffs(page, c.specs)
			if len(diffs) != 1 {
				t.Fatalf("referenceDiffs = %q, want one difference", diffs)
			}
			for _, w := range c.want {
				if !strings.Contains(diffs[0], w) {
					t.Errorf("referenceDiffs = %q, want it to mention %q", diffs[0], w)
				}
			}
			if out, err := renderReference(page, c.specs); err == nil && out == page {
				t.Errorf("renderReference gave the page unchanged")
			}
		})
	}
}

// Every row of the key table renders to one markdown table row, every
// table names its keys once, and every table but the top level is a key
// of its parent.
func TestKeyTableIsWellFormed(t *testing.T) {
	types := []string{"string", "boolean", "integer", "duration", "size", "array of strings", "table", "array of tables"}
	for _, sp := range allSpecs {
		if len(sp.keys) == 0 {
			t.Errorf("%s has no keys", sp.title())
		}
		seen := map[string]bool{}
		for _, k := range sp.keys {
			if k.bind == nil {
				t.Errorf("%s.%s binds to no field", sp.title(), k.Name)
			}
			if seen[k.Name] {
				t.Errorf("%s lists %s twice", sp.title(), k.Name)
			}
			seen[k.Name] = true
			if !slices.Contains(types, k.Type) {
				t.Errorf("%s.%s: type %q; want one of %s", sp.title(), k.Name, k.Type, strings.Join(types, ", "))
			}
			for field, v := range map[string]string{"Name": k.Name, "Default": k.Default, "Allowed": k.Allowed} {
				if strings.TrimSpace(v) == "" || strings.ContainsAny(v, "|\n") {
					t.Errorf("%s.%s: %s %q is empty or holds '|' or a line break, which break the table row", sp.title(), k.Name, field, v)
				}
			}
		}
		for _, secret := range sortedKeys(anyMap(sp.secrets)) {
			if seen[secret] {
				t.Errorf("%s: %s is both a key and a refused secret", sp.title(), secret)
			}
		}
	}
	for _, parent := range allSpecs {
		for _, k := range parent.keys {
			if k.Type != "table" && k.Type != "array of tables" {
				continue
			}
			found := false
			for _, sp := range allSpecs {
				found = found || (sp.name == k.Name && sp.header == subHeader(parent, k))
			}
			if !found {
				t.Errorf("%s.%s is a %s, but no spec describes %s", parent.title(), k.Name, k.Type, subHeader(parent, k))
			}
		}
	}
	for _, sp := range allSpecs[1:] {
		if Keys(strings.Trim(sp.header, "[]")) == nil {
			t.Errorf("Keys(%q) is nil", strings.Trim(sp.header, "[]"))
		}
	}
}

// subHeader is the header of the table k, a key of parent: [k] or [[k]],
// dotted below parent.
func subHeader(parent *spec, k Key) string {
	name := k.Name
	if p := strings.Trim(parent.header, "[]"); p != "" {
		name = p + "." + name
	}
	if k.Type == "array of tables" {
		return "[[" + name + "]]"
	}
	return "[" + name + "]"
}

func anyMap(m map[string]string) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
