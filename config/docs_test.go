package config

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// docPages returns the documentation pages, README.md and every docs/*.md,
// by path relative to this package, with their text.
func docPages(t *testing.T) map[string]string {
	t.Helper()
	docs, err := filepath.Glob("../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatal("../docs holds no *.md pages")
	}
	pages := make(map[string]string)
	for _, path := range append([]string{"../README.md"}, docs...) {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		pages[filepath.Clean(path)] = string(b)
	}
	return pages
}

// Every link of the README and the docs pages resolves: a relative target
// names a file that exists (relative to the page), and an #anchor, on the
// page itself or on another markdown page, names one of its headings.
// External links are not fetched.
func TestDocsLinksResolve(t *testing.T) {
	pages := docPages(t)
	anchors := make(map[string]map[string]bool)
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := anchors[path]; ok {
			return a, nil
		}
		text, ok := pages[path]
		if !ok {
			b, err := os.ReadFile(path)
			if err != nil {
				return nil, err
			}
			text = string(b)
		}
		a := headingAnchors(text)
		anchors[path] = a
		return a, nil
	}
	n := 0
	for page, text := range pages {
		for _, l := range markdownLinks(text) {
			n++
			if err := checkLink(page, l.target, anchorsOf); err != nil {
				t.Errorf("%s:%d: [%s](%s): %v", page, l.line, l.text, l.target, err)
			}
		}
	}
	if n == 0 {
		t.Fatal("found no links in the README and docs pages")
	}
}

// checkLink resolves one link target of page.
func checkLink(page, target string, anchorsOf func(string) (map[string]bool, error)) error {
	if strings.HasPrefix(target, "http://") || strings.HasPrefix(target, "https://") || strings.HasPrefix(target, "mailto:") {
		return nil
	}
	if target == "" {
		return fmt.Errorf("empty target")
	}
	file, anchor, hasAnchor := strings.Cut(target, "#")
	path := page
	if file != "" {
		if filepath.IsAbs(file) || strings.Contains(file, "://") {
			return fmt.Errorf("not a relative link")
		}
		path = filepath.Join(filepath.Dir(page), filepath.FromSlash(file))
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("no such file %s", path)
		}
	}
	if !hasAnchor {
		return nil
	}
	if !strings.HasSuffix(path, ".md") {
		return fmt.Errorf("an anchor into %s, which is not a markdown page", path)
	}
	a, err := anchorsOf(path)
	if err != nil {
		return err
	}
	if !a[anchor] {
		return fmt.Errorf("no heading of %s has the anchor #%s", path, anchor)
	}
	return nil
}

type mdLink struct {
	text, target string
	line         int
}

var linkRe = regexp.MustCompile(`!?\[([^\]]*)\]\(([^)\s]*)(?:\s+"[^"]*")?\)`)

// markdownLinks returns the inline links [text](target) of a markdown text,
// outside fenced code blocks and code spans; the text may span lines.
func markdownLinks(text string) []mdLink {
	prose := blankCode(text)
	var links []mdLink
	for _, m := range linkRe.FindAllStringSubmatchIndex(prose, -1) {
		links = append(links, mdLink{
			text:   strings.Join(strings.Fields(prose[m[2]:m[3]]), " "),
			target: prose[m[4]:m[5]],
			line:   1 + strings.Count(prose[:m[0]], "\n"),
		})
	}
	return links
}

// blankCode replaces fenced code blocks and code spans with spaces (keeping
// every newline, so line numbers hold), since links in code are literal text.
func blankCode(text string) string {
	lines := strings.SplitAfter(text, "\n")
	fence := ""
	for i, l := range lines {
		s := strings.TrimLeft(l, " ")
		switch {
		case fence != "":
			if strings.HasPrefix(s, fence) && strings.TrimSpace(strings.TrimLeft(s, fence[:1])) == "" {
				fence = ""
			}
			lines[i] = blank(l)
		case strings.HasPrefix(s, "```") || strings.HasPrefix(s, "~~~"):
			fence = s[:3]
			for j := 3; j < len(s) && s[j] == fence[0]; j++ {
				fence += s[:1]
			}
			lines[i] = blank(l)
		}
	}
	b := []byte(strings.Join(lines, ""))
	for i := 0; i < len(b); {
		if b[i] != '`' {
			i++
			continue
		}
		n := run(b, i)
		end := -1
		for j := i + n; j < len(b); {
			if b[j] != '`' {
				j++
				continue
			}
			m := run(b, j)
			if m == n {
				end = j + m
				break
			}
			j += m
		}
		if end < 0 {
			i += n
			continue
		}
		for j := i; j < end; j++ {
			if b[j] != '\n' {
				b[j] = ' '
			}
		}
		i = end
	}
	return string(b)
}

func run(b []byte, i int) int {
	n := 0
	for i+n < len(b) && b[i+n] == '`' {
		n++
	}
	return n
}

func blank(l string) string {
	if strings.HasSuffix(l, "\n") {
		return strings.Repeat(" ", len(l)-1) + "\n"
	}
	return strings.Repeat(" ", len(l))
}

var headingRe = regexp.MustCompile(`^ {0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$`)

// headingAnchors returns the GitHub anchors of the headings of a markdown
// text, outside fenced code blocks: a repeated heading gets -1, -2, ...
func headingAnchors(text string) map[string]bool {
	lines := strings.Split(text, "\n")
	fence := false
	seen := make(map[string]int)
	anchors := make(map[string]bool)
	for _, l := range lines {
		s := strings.TrimLeft(l, " ")
		if strings.HasPrefix(s, "```") || strings.HasPrefix(s, "~~~") {
			fence = !fence
			continue
		}
		if fence {
			continue
		}
		m := headingRe.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		a := githubAnchor(m[1])
		if k := seen[a]; k > 0 {
			seen[a] = k + 1
			a = fmt.Sprintf("%s-%d", a, k)
		} else {
			seen[a] = 1
		}
		anchors[a] = true
	}
	return anchors
}

var inlineLinkRe = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

// githubAnchor is the anchor GitHub gives a heading: its text without
// markup, lower case, every character but letters, digits, spaces, '-' and
// '_' removed, and spaces turned into '-'.
func githubAnchor(heading string) string {
	heading = inlineLinkRe.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func TestGitHubAnchor(t *testing.T) {
	for heading, want := range map[string]string{
		"Delivery guarantees":                                 "delivery-guarantees",
		"Before the first run: `jetlake plan`":                "before-the-first-run-jetlake-plan",
		"Output: compression, Parquet and typed columns":      "output-compression-parquet-and-typed-columns",
		"Compression of `json_lines`, `json_array` and `raw`": "compression-of-json_lines-json_array-and-raw",
		"Typed columns: `[[output.columns]]`":                 "typed-columns-outputcolumns",
		"`[output]` keys":                                     "output-keys",
		"A [linked](x.md) heading":                            "a-linked-heading",
	} {
		if got := githubAnchor(heading); got != want {
			t.Errorf("githubAnchor(%q) = %q, want %q", heading, got, want)
		}
	}
	got := headingAnchors("# A\n\n```sh\n# A\n```\n\n## A\n### A\n")
	for _, want := range []string{"a", "a-1", "a-2"} {
		if !got[want] {
			t.Errorf("headingAnchors: no %q in %v", want, got)
		}
	}
	if got["a-3"] {
		t.Errorf("headingAnchors counted a heading in a code block: %v", got)
	}
}

func TestMarkdownLinksSkipCode(t *testing.T) {
	text := "a [one](x.md#y) and `[two](z.md)`\n\n```md\n[three](w.md)\n```\n[four\nlines](#f) ``[five](v.md)``\n"
	var got []string
	for _, l := range markdownLinks(text) {
		got = append(got, fmt.Sprintf("%d %s %s", l.line, l.text, l.target))
	}
	want := []string{"1 one x.md#y", "6 four lines #f"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("markdownLinks = %q, want %q", got, want)
	}
}
