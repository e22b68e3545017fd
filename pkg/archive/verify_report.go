package archive

// AllProblems lists every problem of the report: each part's, prefixed by
// its key, then the run's own (totals, manifest).
func (r *VerifyReport) AllProblems() []string {
	var probs []string
	for _, pc := range r.Parts {
		for _, p := range pc.Problems {
			probs = append(probs, pc.Key+": "+p)
		}
	}
	return append(probs, r.Problems...)
}
