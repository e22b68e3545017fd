package cmd

import "github.com/dlqctl/dlqctl/pkg/output"

// writeStructured prints a command's data for -o json (whole, as one
// document) and -o ndjson (one line per item) and reports whether it did;
// for -o table it does nothing and returns false, and the caller renders
// its table.
func writeStructured[T any](f *Factory, whole any, items []T) (bool, error) {
	format, _ := f.Format()
	switch format {
	case output.JSON:
		return true, output.WriteJSON(f.IO.Out, whole)
	case output.NDJSON:
		w := output.NewNDJSON(f.IO.Out)
		for _, it := range items {
			if err := w.Write(it); err != nil {
				return true, err
			}
		}
		return true, nil
	}
	return false, nil
}
