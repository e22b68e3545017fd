package kafka

// Fetch bounds of dlqctl's consumer, for the bare loop of BenchmarkRedrive
// (it must fetch the same way to be compared side by side).
const (
	FetchMaxBytes          = fetchMaxBytes
	FetchMaxPartitionBytes = fetchMaxPartitionBytes
	FetchMaxWait           = fetchMaxWait
)
