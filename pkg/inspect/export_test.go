package inspect

// For the benchmarks of package inspect_test (which can use
// internal/benchdata without an import cycle).
var (
	UnmarshalRecordForTest = unmarshalRecord
	ParseValueForTest      = parseValue
)
