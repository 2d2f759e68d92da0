// Package docs checks the manual: README.md stays a short entry point, every
// relative link in it, in docs/ and in the other top-level pages resolves to a
// file and, with an anchor, to a heading of that file, and no file of the
// repository points at documents outside it.
package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const root = "../.."

// readmeMaxLines: the README is what it is, the two commands, a production
// quick start, the map of the code and links; the rest lives under docs/.
const readmeMaxLines = 250

func TestReadmeIsShort(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d: move the detail to a page under docs/", n, readmeMaxLines)
	}
}

// pages are the manual's files, relative to the repository's root.
func pages(t *testing.T) []string {
	t.Helper()
	ps := []string{"README.md", "SECURITY.md", "BENCHMARKS.md"}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) == 0 {
		t.Fatal("no page under docs/")
	}
	for _, d := range docs {
		rel, _ := filepath.Rel(root, d)
		ps = append(ps, rel)
	}
	return ps
}

// anchor is GitHub's anchor of a heading: lower case, spaces as dashes,
// everything but letters, digits, '-' and '_' dropped.
func anchor(heading string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == ' ':
			return '-'
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return -1
	}, heading)
}

// outsideFences is text with its fenced code blocks blanked.
func outsideFences(text string) string {
	var b strings.Builder
	fence := false
	for _, l := range strings.SplitAfter(text, "\n") {
		if strings.HasPrefix(l, "```") {
			fence = !fence
			b.WriteString("\n")
			continue
		}
		if fence {
			b.WriteString("\n")
			continue
		}
		b.WriteString(l)
	}
	return b.String()
}

func headings(t *testing.T, file string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	hs := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^#+ (.+)$`).FindAllStringSubmatch(outsideFences(string(b)), -1) {
		hs[anchor(m[1])] = true
	}
	return hs
}

func TestLinksResolve(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	checked := 0
	for _, page := range pages(t) {
		b, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(outsideFences(string(b)), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			file, frag, _ := strings.Cut(target, "#")
			if file == "" {
				file = page
			} else {
				file = filepath.Join(filepath.Dir(page), file)
			}
			checked++
			if _, err := os.Stat(filepath.Join(root, file)); err != nil {
				t.Errorf("%s: link %s: no file %s", page, target, file)
				continue
			}
			if frag != "" && strings.HasSuffix(file, ".md") && !headings(t, file)[frag] {
				t.Errorf("%s: link %s: no heading #%s in %s", page, target, frag, file)
			}
		}
	}
	if checked < 10 {
		t.Errorf("only %d relative links found: the pattern no longer matches the pages' links", checked)
	}
}

// The repository stands alone: no file points at a design document kept
// elsewhere or at the tracker's issue numbers.
func TestNoReferenceOutsideTheRepository(t *testing.T) {
	bad := regexp.MustCompile(`(?i)\bDESIGN\.md\b|\bissue #?[0-9]+\b`)
	skip := map[string]bool{".git": true, "bench-out": true}
	files := 0
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skip[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".md", ".sql", ".yml", ".yaml", ".toml", ".json", ".service", ".example", "":
		default:
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		files++
		for _, m := range bad.FindAllIndex(b, -1) {
			rel, _ := filepath.Rel(root, path)
			line := 1 + strings.Count(string(b[:m[0]]), "\n")
			t.Errorf("%s:%d: %q refers outside the repository: say the constraint in its own words", rel, line, b[m[0]:m[1]])
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Errorf("only %d files read", files)
	}
}

// Every alert's runbook_url points at a section of docs/operations.md.
func TestAlertRunbooksExist(t *testing.T) {
	rules, err := os.ReadFile(filepath.Join(root, "deploy", "prometheus", "outboxtop-rules.yml"))
	if err != nil {
		t.Fatal(err)
	}
	anchors := headings(t, filepath.Join("docs", "operations.md"))
	alerts := regexp.MustCompile(`(?m)^\s+- alert: (\w+)$`).FindAllStringSubmatch(string(rules), -1)
	urls := regexp.MustCompile(`runbook_url: "[^"#]+/docs/operations\.md#([^"]+)"`).FindAllStringSubmatch(string(rules), -1)
	if len(alerts) < 10 || len(urls) != len(alerts) {
		t.Fatalf("%d alerts, %d runbook links to docs/operations.md: every alert needs one", len(alerts), len(urls))
	}
	for i, u := range urls {
		if !anchors[u[1]] {
			t.Errorf("%s: runbook #%s is no heading of docs/operations.md", alerts[i][1], u[1])
		}
	}
}
