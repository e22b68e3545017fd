package report

import "github.com/dlqctl/dlqctl/pkg/output"

// WriteStructured prints a command's data for -o json (whole, as one
// document) and -o ndjson (one line per item) and reports whether it did;
// for -o table it does nothing and returns false, and the caller renders
// its table.
func WriteStructured[T any](s *output.IOStreams, format output.Format, whole any, items []T) (bool, error) {
	switch format {
	case output.JSON:
		return true, output.WriteJSON(s.Out, whole)
	case output.NDJSON:
		w := output.NewNDJSON(s.Out)
		for _, it := range items {
			if err := w.Write(it); err != nil {
				return true, err
			}
		}
		return true, nil
	}
	return false, nil
}
