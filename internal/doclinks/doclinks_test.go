package doclinks

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// repo is the repository's root, from this package's directory.
const repo = "../.."

// TestDocsLinks checks every relative link and anchor of README.md and the
// Markdown files under docs/.
func TestDocsLinks(t *testing.T) {
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(repo, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, err := filepath.Rel(repo, path)
			files = append(files, filepath.ToSlash(rel))
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 10 {
		t.Fatalf("found only %v: is docs/ there?", files)
	}
	broken, err := Check(repo, files)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range broken {
		t.Errorf("broken link: %v", b)
	}
}

// TestReadmeLength keeps README.md a front page: the rest is in docs/.
func TestReadmeLength(t *testing.T) {
	const most = 150
	data, err := os.ReadFile(filepath.Join(repo, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(data, []byte("\n")); n > most {
		t.Errorf("README.md has %d lines, more than %d: move the detail to a page of docs/ and link it", n, most)
	}
}

// TestCheck runs the checker on testdata/, whose broken links are known.
func TestCheck(t *testing.T) {
	broken, err := Check("testdata", []string{"README.md", "docs/page.md"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range broken {
		got = append(got, b.String())
	}
	want := []string{
		`README.md:9: docs/missing.md: no file docs/missing.md`,
		`README.md:10: docs/page.md#no-such-heading: no heading of docs/page.md has the id "no-such-heading"`,
		`README.md:11: img/missing.png: no file img/missing.png`,
		`README.md:12: #Getting-Started: no heading of README.md has the id "Getting-Started"`,
		`README.md:13: ../outside.md: outside the repository`,
		`README.md:14: /docs/page.md: an absolute path: GitHub resolves it against its own site, not the repository`,
		`README.md:17: docs/gone.md: no file docs/gone.md`,
		`README.md:29: docs/page.md#the-rule-2: no heading of docs/page.md has the id "the-rule-2"`,
		`README.md:31: img/none.png: no file img/none.png`,
		`docs/page.md:12: ../README.md#getting: no heading of README.md has the id "getting"`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("broken links:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestSlug(t *testing.T) {
	for text, want := range map[string]string{
		"Getting started":                          "getting-started",
		"The editor protocol (`nexusd --stdio`)":   "the-editor-protocol-nexusd---stdio",
		`What "always" covers`:                     "what-always-covers",
		"gRPC from another machine (TLS)":          "grpc-from-another-machine-tls",
		"The workspace's identity: tokens":         "the-workspaces-identity-tokens",
		"MCP servers' questions":                   "mcp-servers-questions",
		"`make local-llm`":                         "make-local-llm",
		"A [linked](other.md#x) heading":           "a-linked-heading",
		"snake_case and C++ — and émigrés":         "snake_case-and-c--and-émigrés",
		"Beyond one machine: TLS and Redis":        "beyond-one-machine-tls-and-redis",
		"What the person sees is what runs (rule)": "what-the-person-sees-is-what-runs-rule",
	} {
		if got := Slug(text); got != want {
			t.Errorf("Slug(%q) = %q, want %q", text, got, want)
		}
	}
}
