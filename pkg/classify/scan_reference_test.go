package classify

import (
	"reflect"
	"strings"
	"testing"

	"github.com/dlqctl/dlqctl/internal/corpus"
	"github.com/dlqctl/dlqctl/pkg/inspect"
)

var refNegators = map[string]bool{"non": true, "not": true, "never": true, "without": true}

// scanReference is vocabulary.scan as it was before it was made to run
// without allocating (canonical text, then words, then map lookups):
// FuzzScanMatchesReference checks that both find the same signals.
func (v *vocabulary) scanReference(text string, buf []string) ([]hit, []string) {
	c := canonical(stripURLs(text))
	words := tokens(c, buf[:0])
	var hits []hit
	add := func(h hit) {
		for i := range hits {
			if hits[i].family == h.family {
				if h.strong && !hits[i].strong {
					hits[i] = h
				}
				return
			}
		}
		hits = append(hits, h)
	}
	for i, w := range words {
		negated := i > 0 && refNegators[words[i-1]]
		if !negated {
			for _, s := range v.byFirst[w] {
				if matchAt(words, i, s) {
					add(hit{s.family, s.group, s.text, s.strong, i})
				}
			}
			for _, s := range v.prefixes {
				if strings.HasPrefix(w, s.words[0]) {
					add(hit{s.family, s.group, s.text, s.strong, i})
				}
			}
		}
		// HTTP statuses: "HTTP 503", "status code 429", "returned 404".
		// In free text a 4xx is a weak signal: AWS SDKs report throttling
		// as "Status Code: 400; Error Code: ThrottlingException".
		if len(w) == 3 && (w[0] == '4' || w[0] == '5') && isDigits(w) {
			for k := i - 1; k >= 0 && k >= i-3; k-- {
				if httpContext[words[k]] {
					if f := httpStatusFamily(w); f != "" {
						add(hit{f, "http", "HTTP " + w, f == FamilyTransient, i})
					}
					break
				}
			}
		}
		// "order o-404 not found", "customer c-1 does not exist": a
		// business entity that is missing.
		if (w == "found" && i > 0 && words[i-1] == "not") || (w == "exist" && i > 1 && words[i-1] == "not" && words[i-2] == "does") {
			for k := i - 2; k >= 0 && k >= i-6; k-- {
				if businessEntities[words[k]] {
					add(hit{FamilyBusiness, "rejection", words[k] + " … not found", true, k})
					break
				}
			}
		}
		// SQLSTATE codes: "SQLSTATE 40001", "SQL state: 23505".
		if (w == "sqlstate" || (w == "state" && i > 0 && words[i-1] == "sql")) && i+1 < len(words) {
			if f, g := sqlStateFamily(words[i+1]); f != "" {
				add(hit{f, g, "SQLSTATE " + strings.ToUpper(words[i+1]), true, i})
			}
		}
		// MySQL error numbers after "error", "errno" or "err".
		if len(w) == 4 && i > 0 && (words[i-1] == "errno" || words[i-1] == "error" || words[i-1] == "err") && isDigits(w) {
			if f, g := mysqlErrnoFamily(w); f != "" {
				add(hit{f, g, "MySQL error " + w, true, i})
			}
		}
		// "exceeds the search-indexer limit": a business limit.
		if strings.HasPrefix(w, "exceed") {
			for k := i + 1; k < len(words) && k <= i+4; k++ {
				if words[k] == "limit" {
					add(hit{FamilyBusiness, "rejection", "exceeds … limit", false, i})
					break
				}
			}
		}
	}
	return hits, words
}

// scanTexts are evidence texts of every corpus message, every signal
// phrase in the forms texts use (as written, lower-cased, snake_case,
// negated) and edge cases: the seeds of FuzzScanMatchesReference and the
// texts TestScanMatchesReference checks.
func scanTexts(t testing.TB) []string {
	msgs, err := corpus.Load(corpus.Dir("../.."))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range msgs {
		rec, err := m.Record()
		if err != nil {
			t.Fatal(err)
		}
		inspect.Decode(&rec)
		for _, e := range evidenceOf(rec.Failure) {
			out = append(out, e.Text)
		}
	}
	for _, def := range signalDefs {
		for _, p := range def.phrases {
			p = strings.TrimSuffix(p, "*")
			out = append(out, p, "error: "+strings.ToLower(p)+"ing now", strings.ReplaceAll(p, " ", "_"), "not "+p, "x"+p+"Exception")
		}
	}
	return append(out, "", " ", "é", "\xff\xfe", "HTTP 503 from https://fraud-check.example/v2/timeout", "status code 404, returned 429",
		"SQLSTATE 40001", "SQL state: 23505", "order o-404 not found", "customer c-1 does not exist",
		"exceeds the search-indexer limit", "non-transient: not retryable", "ECONNRESET by peer\tHTTPError  503\nService",
		strings.Repeat("connection reset ", 200))
}

// TestScanMatchesReference: the allocation-free scan finds exactly the
// signals (family, group, phrase, strength, position) the reference scan
// finds, on every corpus evidence text and signal phrase.
func TestScanMatchesReference(t *testing.T) {
	sc := getScanner()
	defer putScanner(sc)
	for _, text := range scanTexts(t) {
		checkScan(t, sc, text)
	}
}

// TestScanMemoAnswersAsAFreshScan: a text scanned again is answered from
// the scanner's memo with the same signals, even after the caller changed
// the hits it got the first time (readEvidence rewrites their strength),
// after scans of other texts, and after the memo was started afresh.
func TestScanMemoAnswersAsAFreshScan(t *testing.T) {
	sc := &scanner{}
	texts := scanTexts(t)
	for round := range 3 {
		for _, text := range texts {
			builtinVocab.scan(text, sc)
			hits := builtinVocab.scan(text, sc)
			for k := range hits {
				hits[k].strong = !hits[k].strong
				hits[k].family = "changed"
			}
			checkScan(t, sc, text)
		}
		if round == 1 {
			sc.memoBytes = maxMemoBytes // the next new text starts the memo afresh
		}
	}
	if len(sc.memo) == 0 {
		t.Fatal("the memo kept nothing")
	}
}

// FuzzScanMatchesReference: see TestScanMatchesReference.
func FuzzScanMatchesReference(f *testing.F) {
	for _, text := range scanTexts(f) {
		f.Add(text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		sc := getScanner()
		defer putScanner(sc)
		checkScan(t, sc, text)
	})
}

func checkScan(t *testing.T, sc *scanner, text string) {
	t.Helper()
	want, _ := builtinVocab.scanReference(text, nil)
	got := builtinVocab.scan(text, sc)
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("scan(%q):\n got %+v\nwant %+v", text, got, want)
	}
}
