// Package docs embeds dlqctl's documentation (the Markdown next to this
// file, the runbooks and the schema index) so the binary can show it:
// `dlqctl help TOPIC`. Someone with an installed binary has no checkout to
// open docs/iam.md in.
package docs

import (
	"embed"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
)

//go:embed *.md runbooks/*.md schema/README.md rules.example.yaml
var files embed.FS

// Topic is one embedded document.
type Topic struct {
	Name    string // what `dlqctl help NAME` takes: "iam", "runbooks", "canary-redrive"
	Path    string // its path under docs/: "iam.md", "runbooks/canary-redrive.md"
	Title   string // its first heading
	Runbook bool   // one of docs/runbooks
}

// topics are read on first use: most commands never show a document, and
// reading them all costs every start-up.
var topics = sync.OnceValue(load)

func load() []Topic {
	var out []Topic
	add := func(name, p string, runbook bool) {
		b, err := files.ReadFile(p)
		if err != nil {
			panic(err) // embedded at build time: cannot happen
		}
		out = append(out, Topic{Name: name, Path: p, Title: title(string(b), p), Runbook: runbook})
	}
	for _, pattern := range []string{"*.md", "runbooks/*.md"} {
		names, _ := fsGlob(pattern)
		for _, p := range names {
			base := strings.TrimSuffix(path.Base(p), ".md")
			switch {
			case p == "runbooks/README.md":
				add("runbooks", p, false)
			default:
				add(base, p, strings.HasPrefix(p, "runbooks/"))
			}
		}
	}
	add("schema", "schema/README.md", false)
	add("rules-example", "rules.example.yaml", false)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func fsGlob(pattern string) ([]string, error) {
	var out []string
	entries, err := files.ReadDir(path.Dir(pattern))
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		p := path.Join(path.Dir(pattern), e.Name())
		if path.Dir(pattern) == "." {
			p = e.Name()
		}
		if ok, _ := path.Match(pattern, p); ok && !e.IsDir() {
			out = append(out, p)
		}
	}
	return out, nil
}

func title(text, p string) string {
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(line, "# ") {
			return strings.TrimSpace(strings.TrimPrefix(line, "# "))
		}
	}
	if strings.HasSuffix(p, ".yaml") {
		return "An annotated classification rules file (docs/rules.example.yaml)"
	}
	return p
}

// Topics lists every embedded document, sorted by name.
func Topics() []Topic { return append([]Topic(nil), topics()...) }

// Lookup finds a topic by name ("iam"), by its path under docs/
// ("iam.md", "runbooks/big-incident.md", "docs/iam.md") or as
// "runbooks/NAME". Case does not matter.
func Lookup(name string) (Topic, bool) {
	n := strings.ToLower(strings.TrimSpace(name))
	n = strings.TrimPrefix(n, "docs/")
	for _, t := range topics() {
		if n == t.Name || n == strings.ToLower(t.Path) || n == strings.TrimSuffix(strings.ToLower(t.Path), ".md") {
			return t, true
		}
	}
	return Topic{}, false
}

// Raw returns the document as it is in the repository.
func Raw(t Topic) string {
	b, _ := files.ReadFile(t.Path)
	return string(b)
}

var mdLink = regexp.MustCompile(`\[([^\]]+)\]\(([^)\s]+)\)`)

// Text returns the document for a terminal: Markdown links to another
// embedded document become "text (dlqctl help NAME)", so every reference
// can be followed with the binary alone; other links stay as they are.
func Text(t Topic) string {
	dir := path.Dir(t.Path)
	return mdLink.ReplaceAllStringFunc(Raw(t), func(m string) string {
		sub := mdLink.FindStringSubmatch(m)
		text, target := sub[1], sub[2]
		if strings.Contains(target, "://") {
			return m
		}
		file, anchor, _ := strings.Cut(target, "#")
		if file == "" { // a link inside this document
			return text
		}
		other, ok := Lookup(path.Clean(path.Join(dir, file)))
		if !ok {
			return m
		}
		ref := "dlqctl help " + other.Name
		if anchor != "" {
			ref += ", section \"" + strings.ReplaceAll(anchor, "-", " ") + "\""
		}
		return text + " (" + ref + ")"
	})
}
