package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEveryDocumentIsATopic: a Markdown file added under docs/ or
// docs/runbooks is reachable with `dlqctl help NAME`.
func TestEveryDocumentIsATopic(t *testing.T) {
	for _, pattern := range []string{"*.md", "runbooks/*.md"} {
		names, err := filepath.Glob(pattern)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range names {
			topic, ok := Lookup(filepath.ToSlash(p))
			if !ok {
				t.Errorf("%s is not an embedded help topic", p)
				continue
			}
			want, _ := os.ReadFile(p)
			if Raw(topic) != string(want) {
				t.Errorf("%s: the embedded text differs from the file", p)
			}
		}
	}
	for _, name := range []string{"iam", "runbooks", "canary-redrive", "big-incident", "schema", "rules-example", "docs/iam.md", "runbooks/fifo-redrive", "IAM"} {
		if _, ok := Lookup(name); !ok {
			t.Errorf("help topic %q not found", name)
		}
	}
	if _, ok := Lookup("nope"); ok {
		t.Error("an unknown topic was found")
	}
}

// TestLinksBetweenDocumentsPointToHelpTopics: in the binary, a link to
// another document reads "(dlqctl help NAME)", and every such NAME exists.
func TestLinksBetweenDocumentsPointToHelpTopics(t *testing.T) {
	ref := regexp.MustCompile(`\(dlqctl help ([a-z0-9-]+)`)
	rb, _ := Lookup("runbooks")
	text := Text(rb)
	if !strings.Contains(text, "(dlqctl help canary-redrive)") {
		t.Fatalf("the runbook index does not point to `dlqctl help canary-redrive`:\n%s", text)
	}
	// Every runbook is in the index `dlqctl help runbooks` prints.
	for _, topic := range Topics() {
		if topic.Runbook && topic.Name != "runbooks" && !strings.Contains(text, "(dlqctl help "+topic.Name+")") {
			t.Errorf("the runbook index (dlqctl help runbooks) does not point to %s", topic.Path)
		}
	}
	for _, topic := range Topics() {
		text := Text(topic)
		for _, m := range ref.FindAllStringSubmatch(text, -1) {
			if _, ok := Lookup(m[1]); !ok {
				t.Errorf("%s points to help topic %q, which does not exist", topic.Path, m[1])
			}
		}
		if regexp.MustCompile(`\]\((\.\./)?[a-z-]+\.md`).MatchString(text) {
			t.Errorf("%s still has a Markdown link to a .md file that is not a help topic", topic.Path)
		}
	}
}
