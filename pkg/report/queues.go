package report

import (
	"github.com/dlqctl/dlqctl/pkg/broker"
	"github.com/dlqctl/dlqctl/pkg/output"
)

// WriteDLQListing prints what `queues` found, the same way for every
// broker: the items (-o json, ndjson) or the broker's columns and rows,
// then its warnings and note on stderr.
func WriteDLQListing(s *output.IOStreams, format output.Format, res *broker.DLQListing) error {
	if done, err := WriteStructured(s, format, res.Items, res.Items); done {
		return err
	}
	if len(res.Rows) == 0 {
		s.Infof("%s", res.None)
		return nil
	}
	t := output.NewTable(s, res.Columns...)
	for _, r := range res.Rows {
		t.Row(r...)
	}
	if err := t.Render(); err != nil {
		return err
	}
	for _, w := range res.Warnings {
		s.Warnf("%s", w)
	}
	if res.Note != "" {
		s.Infof("%s", res.Note)
	}
	return nil
}
