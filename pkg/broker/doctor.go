package broker

// DoctorStatus is the outcome of one DoctorCheck, in the words `dlqctl
// doctor` prints: ok, warn, not-checked, fail.
type DoctorStatus string

// Statuses of a DoctorCheck.
const (
	DoctorOK         DoctorStatus = "ok"
	DoctorWarn       DoctorStatus = "warn"
	DoctorNotChecked DoctorStatus = "not-checked" // proving it would change something, or the broker does not say
	DoctorFail       DoctorStatus = "fail"
)

// DoctorCheck is one thing a broker package checked about a reference
// for `dlqctl doctor` (reaching the broker, logging in, the queue or topic
// and its settings, permissions), with calls that change nothing. The
// broker packages return these; package doctor turns them into its report.
// No field ever carries a password.
type DoctorCheck struct {
	// Name is what was checked ("rabbitmq connection", "kafka topic" …).
	Name   string
	Status DoctorStatus
	// Detail is what was found, one sentence.
	Detail string
	// Fix is what to do when Status is not ok ("" when nothing).
	Fix string
	// Resource is what the check is about: the reference without
	// credentials (amqp://HOST:PORT/VHOST/QUEUE, kafka://BROKERS/TOPIC).
	Resource string
}

// DoctorCheckDoc says what one check of a broker's doctor looks at, as
// 'dlqctl doctor --help' lists it (Name as in DoctorCheck.Name).
type DoctorCheckDoc struct {
	Name, What string
}
