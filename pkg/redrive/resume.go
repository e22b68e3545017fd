package redrive

// NewestUnfinished is the newest redrive run under stateDir out of the
// queue source names (its ARN or ID) that did not finish (killed,
// interrupted, partial), or nil. Runs of other queues, restores and runs
// that stopped on a verdict (canary failed, guard tripped) are never
// picked.
func NewestUnfinished(stateDir, source string) (*RunMeta, error) {
	runs, err := ListRunMetas(stateDir)
	if err != nil {
		return nil, err
	}
	for i, r := range runs { // newest first
		if r.Kind != "redrive" || r.Source != source {
			continue
		}
		switch r.Status {
		case StatusRunning, StatusInterrupted, StatusPartial:
			return &runs[i], nil
		}
	}
	return nil, nil
}
