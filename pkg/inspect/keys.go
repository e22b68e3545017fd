package inspect

import "slices"

// sortedKeys returns the keys of m in byte order. Decoders walk attributes,
// headers and JSON objects in this order, never in Go's random map order:
// the first type, message or class found fills failure.type, .reason and
// .error_class, so a random order would classify and group the same message
// differently from run to run (found by FuzzDecode).
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
