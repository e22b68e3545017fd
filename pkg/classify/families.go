package classify

import (
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/dlqctl/dlqctl/pkg/inspect"
)

// Failure families: what kind of failure a piece of failure evidence names.
const (
	FamilyTransient = "transient"       // the dependency failed, not the message
	FamilyPermanent = "permanent"       // the message itself is bad
	FamilySchema    = "schema-mismatch" // the consumer does not know this version/type
	FamilyBusiness  = "business"        // a business rule rejected it
	FamilyConfig    = "configuration"   // permissions, missing resources: fix, then replay
)

// A signal is one phrase naming a family, in canonical form (see
// canonical). Strong signals are specific (an exception class, an errno,
// an AWS error code, "connection refused"); weak ones are generic words
// ("timeout", "invalid", "unavailable") that a strong signal of another
// family outweighs. A trailing '*' matches any word starting with the
// phrase's last word.
type signal struct {
	family, group string
	strong        bool
	words         []string
	prefix        bool // last word is a prefix
	text          string
}

// signalDefs are the built-in signals, by family and group. Each line:
// family, group, strength, phrases (written naturally; canonicalised).
var signalDefs = []struct {
	family, group string
	strong        bool
	phrases       []string
}{
	// --- transient: network
	{FamilyTransient, "network", true, []string{"ECONNRESET", "ECONNREFUSED", "ETIMEDOUT", "EAI_AGAIN", "ECONNABORTED", "EHOSTUNREACH",
		"ENETUNREACH", "EPIPE", "connection refused", "connection reset", "connection aborted", "connection timed out",
		"connect timed out", "socket hang up", "socket hangup", "broken pipe", "i/o timeout", "network is unreachable",
		"no route to host", "temporary failure in name resolution", "remote end closed connection", "server disconnected",
		"connection error", "could not connect", "cannot connect", "unable to connect", "failed to connect", "connection closed by",
		"connection was closed", "connection lost", "transient connection", "handshake timeout", "UnknownHostException",
		"name or service not known", "host is unreachable", "no such host", "server closed the connection",
		"closed the connection unexpectedly", "connection is not available", "BrokenCircuitException", "circuit breaker is open", "circuit is open"}},
	// Rust (reqwest/hyper, std::io), Ruby (Net::*, Faraday, PG), PHP (Guzzle,
	// cURL, PDO/MySQL), Elixir (DBConnection, :gen_tcp), Node/Go/Java/.NET
	// drivers: connect errors by their own names.
	{FamilyTransient, "network", true, []string{"error trying to connect", "tcp connect error", "error sending request",
		"connection closed before message completed", "incomplete message", "os error 111", "os error 104", "os error 110",
		"os error 113", "os error 101", "connection failed", "ConnectionFailed", "ConnectException", "connection bad",
		"ConnectionBad", "server has gone away", "lost connection", "connection not available", "connection refused",
		"ServerException", "CannotConnectError", "exception while connecting", "network related", "server selection",
		"MongoNetworkError", "CannotGetJdbcConnectionException", "CannotCreateTransactionException", "JDBCConnectionException",
		"ConnectionNotEstablished", "could not obtain a connection", "EndpointConnectionError", "ServiceRequestError",
		"ServiceResponseError", "could not resolve host", "can't reach", "cannot reach", "unable to reach", "could not reach",
		"failed to establish a new connection", "BrokenPipeError", "ConnectionResetError", "ConnectionRefusedError", "ConnectionAbortedError"}},
	{FamilyTransient, "network", false, []string{"connection closed", "network error", "socket exception", "circuit breaker",
		"name resolution", "getaddrinfo", "eof while reading", "unexpected eof", "GOAWAY", "reset by peer"}},
	// --- transient: timeouts
	{FamilyTransient, "timeout", true, []string{"timed out", "timedout", "time out exceeded", "TimeoutException", "TimeoutError",
		"SocketTimeoutException", "read timeout", "read timed out", "connect timeout", "connection timeout", "request timeout",
		"gateway timeout", "deadline exceeded", "context deadline exceeded", "statement timeout", "lock timeout",
		"lock wait timeout", "query timeout", "timeout after", "timeout of", "timeout expired", "timeout exceeded",
		"timeout elapsed", "execution timeout", "Task timed out after", "TaskCanceledException", "operation was canceled",
		"open timeout", "OpenTimeout", "ReadTimeout", "WriteTimeout", "ConnectTimeout", "PoolTimeout", "TimeoutRejectedException",
		"ConnectionTimeoutError", "operation timed out", "time limit exceeded", "TimeLimitExceeded", "SoftTimeLimitExceeded", "ServiceTimeout", "OperationTimedOut", "request was dropped from queue"}},
	{FamilyTransient, "timeout", false, []string{"timeout", "time out", "operation was aborted", "context canceled"}},
	// --- transient: throttling
	{FamilyTransient, "throttling", true, []string{"throttl*", "rate exceeded", "rate limit*", "ratelimit*", "too many requests",
		"TooManyRequestsException", "request limit exceeded", "RequestLimitExceeded", "ProvisionedThroughputExceededException",
		"provisioned throughput exceeded", "slow down", "SlowDown", "resource exhausted", "too many connections",
		"too many clients", "LimitExceededException", "concurrent invocation limit", "reserved concurrency",
		"request rate is too large", "server busy", "ServerBusy", "try again later", "retry after", "backpressure"}},
	{FamilyTransient, "throttling", false, []string{"quota exceeded", "capacity exceeded", "overloaded", "busy"}},
	// --- transient: server side
	{FamilyTransient, "server", true, append([]string{"internal server error", "bad gateway", "service unavailable",
		"temporarily unavailable", "InternalFailure", "InternalServerError", "ServiceUnavailable", "ServiceUnavailableException",
		"InternalErrorException", "status code unavailable", "5xx", "retriable", "retryable", "RetriableException", "transient error",
		"temporary error", "transient failure", "connection failure", "internal error"},
		// gRPC UNAVAILABLE, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, ABORTED
		inspect.GRPCCodePhrases(14, 4, 8, 10)...)},
	{FamilyTransient, "server", false, []string{"unavailable", "transient", "temporar*", "try again", "aborted", "internal failure",
		"service exception", "EventAgeExceeded", "MaximumEventAgeInSeconds"}},
	// --- transient: database
	{FamilyTransient, "database", true, []string{"deadlock*", "lock wait timeout", "serialization failure", "could not serialize access",
		"database is locked", "the database system is starting up", "the database system is shutting down", "pool exhausted",
		"connection pool exhausted", "connection pool timeout", "connection pool is full", "pool timeout",
		"timed out waiting for a connection", "connection from the pool", "terminating connection due to administrator command", "too many connections",
		"SQLTransientException", "SQLTransientConnectionException", "SQLRecoverableException", "CannotAcquireLockException",
		"TransientDataAccessException", "OptimisticLock*", "ConcurrencyFailureException", "lock request time out"}},

	// HTTP clients and SDKs by their own error names: undici/fetch, axios,
	// requests/httpx, OkHttp, .NET HttpClient, reqwest, Go net/http, AWS SDKs.
	{FamilyTransient, "network", true, []string{"UND_ERR_CONNECT_TIMEOUT", "UND_ERR_SOCKET", "UND_ERR_HEADERS_TIMEOUT",
		"UND_ERR_BODY_TIMEOUT", "UND_ERR_CLOSED", "fetch failed", "other side closed", "connection terminated", "ConnectTimeoutError", "HeadersTimeoutError", "BodyTimeoutError", "SocketError",
		"ERR_SOCKET_CONNECTION_TIMEOUT", "ECONNABORTED", "ERR_NETWORK", "NewConnectionError", "MaxRetryError", "ProtocolError",
		"RemoteDisconnected", "ConnectError", "ReadError", "WriteError", "RemoteProtocolError", "NetworkError",
		"Client.Timeout exceeded", "awaiting headers", "dial tcp", "unexpected end of stream", "stream was reset",
		"StreamResetException", "SocketException", "IOException: unexpected end of stream",
		"network connection was lost", "server misbehaving", "TLS handshake timeout", "tls handshake timeout",
		"RequestTimeout", "RequestTimeoutException", "PriorRequestNotComplete", "TransactionConflict",
		"EC2ThrottledException", "SlowDownException", "response ended prematurely", "ended prematurely",
		// Kafka clients (Java, librdkafka, franz-go, sarama, kafkajs)
		"out of available brokers", "no available brokers", "BrokerNotAvailable", "LEADER_NOT_AVAILABLE", "LeaderNotAvailable",
		"NOT_LEADER_FOR_PARTITION", "NotLeaderForPartition", "NOT_LEADER_OR_FOLLOWER", "NotLeaderOrFollower", "NOT_ENOUGH_REPLICAS",
		"NotEnoughReplicas", "REQUEST_TIMED_OUT", "KafkaJSConnectionError", "KafkaJSRequestTimeoutError", "KafkaJSNumberOfRetriesExceeded",
		"DisconnectException", "NetworkException", "broker transport failure", "all brokers down", "_TRANSPORT", "_ALL_BROKERS_DOWN",
		"COORDINATOR_NOT_AVAILABLE", "REBALANCE_IN_PROGRESS", "RebalanceInProgress", "ServiceUnavailableError", "InternalServerException",
		"ProvisionedThroughputExceeded", "ThrottledException", "KMSThrottlingException", "IDPCommunicationError"}},
	// Localised runtimes and databases (German, French, Spanish,
	// Portuguese): .NET/Java socket errors, PostgreSQL's translated messages.
	{FamilyTransient, "network", true, []string{
		"Verbindung abgelehnt", "Verbindungsaufbau abgelehnt", "Verbindung verweigerte", "die Verbindung verweigerte",
		"vom Remotehost geschlossen", "Verbindung zurückgesetzt", "Verbindung wurde unterbrochen", "Netzwerk ist nicht erreichbar",
		"konnte nicht aufgelöst werden", "keine Verbindung", "konnte keine Verbindung",
		"connexion refusée", "l'a expressément refusée", "fermée par l'hôte distant", "réinitialisée par le correspondant",
		"réseau est inaccessible", "impossible de se connecter", "impossible de résoudre",
		"conexión rechazada", "denegó expresamente dicha conexión", "interrupción de una conexión existente", "no se puede conectar",
		"no se pudo conectar", "conexión restablecida", "red es inalcanzable",
		"conexão recusada", "as recusou ativamente", "cancelamento de uma conexão existente", "não foi possível conectar",
		"não foi possível se conectar", "conexão redefinida", "rede está inacessível"}},
	{FamilyTransient, "timeout", true, []string{"Zeitüberschreitung", "Zeitlimit", "Timeout abgelaufen", "Wartezeit überschritten",
		"délai d'attente", "délai dépassé", "délai expiré", "expiration du délai",
		"tiempo de espera", "se agotó el tiempo", "tiempo agotado",
		"tempo limite", "tempo esgotado", "esgotou o tempo"}},
	{FamilyTransient, "throttling", true, []string{"zu viele Anfragen", "trop de requêtes", "demasiadas solicitudes", "demasiadas peticiones",
		"muitas requisições", "muitas solicitações", "requests per minute", "requests per second", "per minute", "per second", "rate quota"}},
	{FamilyTransient, "server", true, []string{"Dienst nicht verfügbar", "vorübergehend nicht verfügbar", "service indisponible",
		"temporairement indisponible", "servicio no disponible", "temporalmente no disponible", "serviço indisponível",
		"temporariamente indisponível", "TTLExpiredException", "TimeToLiveExceeded", "TimedOut", "Busy"}},
	{FamilyTransient, "database", true, []string{"Verklemmung", "konnte Zugriff nicht serialisieren", "interblocage", "blocage détecté",
		"n'a pas pu sérialiser", "bloqueo mutuo", "se ha detectado un deadlock", "no se pudo serializar", "impasse detectado",
		"não pôde serializar", "não foi possível serializar",
		// MySQL / MariaDB (mysql2, go-sql-driver, JDBC): by name
		"ER_LOCK_DEADLOCK", "ER_LOCK_WAIT_TIMEOUT", "ER_CON_COUNT_ERROR", "ER_TOO_MANY_USER_CONNECTIONS", "PROTOCOL_CONNECTION_LOST",
		"ER_SERVER_SHUTDOWN", "ER_QUERY_INTERRUPTED", "ER_LOCK_NOWAIT", "CR_SERVER_GONE_ERROR", "CR_SERVER_LOST",
		"DeadlockDetectedError", "LockNotAvailableError", "TooManyConnectionsError", "CannotConnectNowError",
		"AdminShutdownError", "OperationalError: server closed"}},

	// --- permanent: parse errors, per stack
	{FamilyPermanent, "parse", true, []string{"SyntaxError", "unexpected token", "JSONDecodeError", "expecting value",
		"JsonParseException", "MismatchedInputException", "JsonMappingException", "UnrecognizedPropertyException",
		"InvalidFormatException", "JsonReaderException", "JsonSerializationException", "JsonException",
		"invalid character", "cannot unmarshal", "unexpected end of JSON input", "unexpected end of input",
		"deserializ*", "SerializationException", "serialization error", "could not parse", "cannot parse", "can't parse",
		"failed to parse", "unable to parse", "parse error", "parsing error", "ParseException", "invalid json", "not valid json",
		"malformed*", "unexpected character", "unrecognized token", "invalid syntax", "MessageConversionException",
		"cannot convert", "could not convert", "conversion failed", "not in a correct format", "UnicodeDecodeError",
		"invalid utf-8", "invalid byte sequence", "unterminated string", "unexpected end of file", "is not valid JSON",
		"value converter", "key converter", "header converter", "DataException", "XmlException",
		// Rust serde, Ruby JSON, Elixir Jason/Poison, PHP json, protobuf
		"DecodingFailure", "decoding failure", "decoding failed", "failed to decode", "could not decode", "unable to decode",
		"cannot decode", "eof while parsing", "expected value at line", "trailing characters at line", "invalid type", "unknown variant",
		"unknown field", "key must be a string", "ParserError", "DecodeError", "unexpected byte at position",
		"Poison.SyntaxError", "Poison.ParseError", "json_decode", "InvalidProtocolBufferException"}},
	{FamilyPermanent, "parse", false, []string{"unmarshal*", "syntax error", "converter"}},
	// gRPC descriptions that override their code: a message over the size
	// limit never fits, however often it is retried.
	{FamilyPermanent, "validation", true, append([]string{"larger than max", "exceeds maximum size", "exceeds max size", "message larger than", "exceeds maximum message size",
		"max message size", "message size exceeds", "message length exceeds", "grpc max", "exceeds the maximum allowed size",
		"item size has exceeded the maximum allowed size", "entity too large", "request too large", "exceeds the limit of",
		"MessageTooLarge", "RecordTooLargeException", "MESSAGE_TOO_LARGE", "InvalidArgument",
		// MySQL by name, localised validation and data errors
		"ER_DUP_ENTRY", "ER_BAD_NULL_ERROR", "ER_DATA_TOO_LONG", "ER_NO_REFERENCED_ROW", "ER_NO_REFERENCED_ROW_2",
		"ER_ROW_IS_REFERENCED_2", "ER_TRUNCATED_WRONG_VALUE", "ER_TRUNCATED_WRONG_VALUE_FOR_FIELD", "ER_WARN_DATA_OUT_OF_RANGE",
		"ER_PARSE_ERROR", "ER_NO_DEFAULT_FOR_FIELD", "ER_CHECK_CONSTRAINT_VIOLATED", "ER_DUP_KEY", "ER_INVALID_JSON_TEXT",
		"doppelter Schlüsselwert", "verletzt Unique-Constraint", "verletzt Fremdschlüssel", "verletzt Not-Null", "ungültige Eingabesyntax",
		"falsche Format", "hat das falsche Format", "darf nicht NULL sein", "darf nicht null sein", "darf nicht leer sein", "ist erforderlich",
		"Pflichtfeld", "Validierung fehlgeschlagen", "Validierungsfehler", "ungültiger Wert", "ungültiges Format", "ungültige Eingabe",
		"clé dupliquée", "rompt la contrainte", "viole la contrainte", "syntaxe en entrée invalide", "pas au format correct",
		"ne peut pas être null", "ne peut pas être vide", "champ obligatoire", "est obligatoire", "est requis", "échec de la validation",
		"erreur de validation", "valeur invalide", "format invalide", "JSON invalide", "valeur non valide",
		"llave duplicada", "clave duplicada", "viola restricción", "viola la restricción", "viola la llave", "sintaxis de entrada no es válida",
		"no tiene el formato correcto", "no puede ser nulo", "no puede estar vacío", "campo obligatorio", "es obligatorio", "es requerido",
		"error de validación", "valor no válido", "formato no válido", "formato inválido", "JSON no válido",
		"valor da chave viola", "viola a restrição", "viola restrição", "sintaxe de entrada é inválida", "em um formato correto",
		"não pode ser nulo", "não pode estar vazio", "campo obrigatório", "é obrigatório", "erro de validação", "valor inválido",
		"JSON inválido"},
		// gRPC INVALID_ARGUMENT, FAILED_PRECONDITION, OUT_OF_RANGE, DATA_LOSS and code 12
		inspect.GRPCCodePhrases(3, 9, 11, 12, 15)...)},
	{FamilyPermanent, "parse", true, []string{"JsonDecodingException", "DecodingException", "DecodingError", "decoding error", "unexpected json token", "Syntaxfehler", "erreur de syntaxe", "error de sintaxis", "erro de sintaxe",
		"konnte nicht deserialisiert", "impossible de désérialiser", "no se pudo deserializar", "não foi possível desserializar"}},

	// --- permanent: validation and bad data
	{FamilyPermanent, "validation", true, []string{"validation*", "ConstraintViolationException", "constraint violation",
		"FormatException", "NumberFormatException", "InvalidCastException", "ClassCastException", "ArgumentNullException",
		"ArgumentException", "ArgumentOutOfRangeException", "IllegalArgumentException", "ValueError", "KeyError",
		"TypeError", "AttributeError", "IndexError", "NullPointerException", "NullReferenceException", "nil pointer dereference",
		"cannot read properties of undefined", "cannot read properties of null", "cannot read property",
		"is not a function", "undefined is not", "is not defined", "missing required", "required field", "missing field",
		"missing property", "missing attribute", "field required", "is a required property", "is required",
		"must not be null", "must not be blank", "must not be empty", "cannot be null", "value cannot be null",
		"not a valid", "invalid input", "invalid value", "invalid argument", "invalid parameter", "invalid request",
		"bad request", "unprocessable", "payload too large", "request entity too large", "too large", "too big",
		"payload size", "message too large", "unsupported media type", "poison", "permanent error", "permanent failure",
		"InvalidParameterException", "InvalidParameterValue", "InvalidRequestContentException", "RequestTooLargeException",
		"integrity error", "IntegrityError", "integrity violation", "DataIntegrityViolationException", "duplicate key",
		"unique constraint", "violates not null constraint", "violates unique constraint", "violates foreign key constraint",
		"violates check constraint", "foreign key constraint", "value too long", "invalid input syntax",
		"numeric field overflow", "out of range", "division by zero", "OverflowException", "INVALID_JSON", "INVALID_PARAMETER",
		// Ruby ActiveRecord, Elixir Ecto/Postgrex, PHP/Laravel
		"RecordInvalid", "RecordNotUnique", "RecordNotSaved", "unique violation", "not null violation", "foreign key violation",
		"check violation", "InvalidChangesetError", "ConstraintError", "CastError", "Ecto.ChangeError", "FunctionClauseError",
		"ArgumentError", "NoMethodError", "MatchError", "UniqueViolation", "NotNullViolation", "ForeignKeyViolation",
		"InvalidTextRepresentation", "duplicate entry", "integrity constraint violation", "InvalidArgumentException",
		"ValidationException", "UnprocessableEntity", "UnknownAttributeError", "unknown attribute", "undefined array key", "undefined index",
		"undefined offset", "undefined variable", "undefined property", "undefined method", "must be positive", "must be greater than", "must be less than",
		"must be a valid", "must be one of", "must match", "must be a number", "must be an integer", "is not a valid"}},
	{FamilyPermanent, "validation", false, []string{"invalid*", "permanent", "type error", "illegal", "unsupported", "validat*"}},

	// --- schema mismatch: unknown versions, types, handlers
	{FamilySchema, "version", true, schemaPhrases()},
	{FamilySchema, "type", true, []string{"no handler*", "no handlers could be found", "no consumer*", "no method found for",
		"no listener", "could not resolve type", "InvalidTypeIdException", "invalid type id", "could not find a concrete type",
		"could not determine the message type", "could not determine type", "type not registered", "message type not registered",
		"not registered for message type", "no mapping for message type", "skipped: no consumer", "unknown discriminator",
		"no subtype", "not a known message type", "could not load type", "TypeLoadException",
		"could not be dispatched to any handlers", "MessageCouldNotBeDispatchedToAnyHandlersException", "NotRegistered",
		"unknown type", "unknown tag", "unknown kind", "unknown variant tag", "unknown message", "unknown command", "unknown union",
		"unknown enum", "unknown subtype", "unregistered type", "unregistered event", "type not found", "no such type",
		"unknown discriminator value", "discriminator", "does not match any of the expected tags", "union tag invalid",
		"unrecognized type discriminator", "unknown type discriminator", "invalid tag", "unknown tag value", "no registered handler", "no handler registered",
		"no route for", "unknown schema id", "schema not found", "subject not found",
		"version not supported", "unsupported protocol version", "unknown protocol version",
		"unbekannter Typ", "unbekannte Version", "nicht unterstützte Version", "type inconnu", "version non prise en charge",
		"version inconnue", "tipo desconocido", "versión no soportada", "versión no compatible", "tipo desconhecido",
		"versão não suportada"}},

	// --- business rejections (kept from the original taxonomy)
	{FamilyBusiness, "rejection", true, []string{"business", "rule violation", "policy violation", "insufficient funds",
		"insufficient balance", "insufficient stock", "insufficient inventory", "insufficient credit", "already cancelled",
		"already canceled", "already processed", "already exists", "already paid", "already refunded", "already shipped",
		"already fulfilled", "already closed", "already completed", "already consumed", "duplicate order", "duplicate payment",
		"duplicate request", "duplicate transaction", "duplicate message", "duplicate event", "declined", "do not honor",
		"out of stock", "account closed", "account suspended", "account frozen", "account blocked", "fraudulent", "suspected fraud",
		"fraud suspected", "fraud detected", "flagged as fraud", "FraudDetected", "card expired",
		"order not found", "customer not found", "account not found", "user not found", "product not found",
		"payment not found", "invoice not found", "item not found", "entity not found", "EntityNotFoundException",
		"sku not found", "order does not exist", "customer does not exist", "not eligible", "credit limit",
		"RecordNotFound", "ModelNotFoundException", "NoResultsError"}},
	{FamilyBusiness, "rejection", false, []string{"rejected", "not allowed", "not permitted", "limit exceeded"}},

	// --- configuration: permissions and missing resources (fixable, then replayable)
	{FamilyConfig, "configuration", true, append([]string{"access denied", "AccessDenied", "AccessDeniedException", "not authorized",
		"unauthorized", "UnauthorizedException", "forbidden", "permission denied", "no permissions", "insufficient permissions",
		"missing permissions", "failed to assume role", "FAILED_TO_ASSUME_ROLE", "NO_PERMISSIONS", "NO_RESOURCE",
		"RULE_NOT_FOUND", "ResourceNotFoundException", "function not found", "queue does not exist", "NonExistentQueue",
		"QueueDoesNotExist", "NoSuchBucket", "security token", "ExpiredToken", "ExpiredTokenException", "invalid credentials",
		"InvalidClientTokenId", "UnrecognizedClientException", "signature does not match", "key is disabled",
		"KMSDisabledException", "KMSAccessDeniedException", "KMSNotFoundException", "HandlerNotFound", "ImportModuleError",
		"cannot find module", "CROSS_ACCOUNT_INGESTION_FAILED", "CROSS_REGION_INGESTION_FAILED", "THIRD_ACCOUNT_HOP_DETECTED",
		"THIRD_REGION_HOP_DETECTED", "RESOURCE_ALREADY_FROZEN", "EntityNotFound",
		// Azure SDK error codes (RequestFailedException "ErrorCode: …")
		"AuthorizationFailure", "AuthenticationFailed", "AuthorizationPermissionMismatch", "InvalidAuthenticationInfo",
		"ContainerNotFound", "QueueNotFound", "BlobNotFound", "MessagingEntityNotFound", "ClientAuthenticationError",
		// quotas that a retry does not refill (billing, daily), permission
		// errors of gRPC, MySQL, localised runtimes
		"insufficient_quota", "insufficient quota", "check your plan", "billing details", "requires billing", "billing to be enabled",
		"billing is disabled", "billing account", "per day", "daily limit", "daily quota",
		"ER_ACCESS_DENIED_ERROR", "ER_DBACCESS_DENIED_ERROR", "ER_NO_SUCH_TABLE",
		"ER_BAD_DB_ERROR", "ER_TABLEACCESS_DENIED_ERROR", "Zugriff verweigert", "Berechtigung verweigert", "accès refusé",
		"permission refusée", "acceso denegado", "permiso denegado", "acesso negado", "permissão negada",
		"does not exist", "n'existe pas", "existiert nicht", "no existe", "não existe", "undefined table", "UndefinedTable",
		"relation does not exist"},
		// gRPC PERMISSION_DENIED, UNAUTHENTICATED
		inspect.GRPCCodePhrases(7, 16)...)},
}

// schemaPhrases expands the schema/version vocabulary: an adjective
// (unsupported, unknown, …) before a noun (version, event type, schema, …),
// and nouns followed by "not supported", "mismatch", ….
func schemaPhrases() []string {
	adj := []string{"unsupported", "unknown", "unexpected", "incompatible", "unrecognized", "unrecognised", "unhandled"}
	nouns := []string{"version", "event version", "schema version", "message version", "payload version", "data version",
		"schema", "event type", "message type", "event schema", "message schema", "event", "schema ref", "record type",
		"command type", "event name", "type id"}
	var out []string
	for _, a := range adj {
		for _, n := range nouns {
			out = append(out, a+" "+n)
		}
	}
	for _, n := range []string{"version", "schema", "event type", "message type"} {
		for _, s := range []string{"not supported", "mismatch", "unknown", "not found", "is not supported", "not recognized"} {
			out = append(out, n+" "+s)
		}
	}
	return append(out, "schema ref", "schemaRef", "no handler for version", "no handler for event version")
}

// vocabulary is the compiled signal index: phrases by their first word,
// and the one-word prefix phrases.
type vocabulary struct {
	byFirst  map[string][]*signal
	prefixes []*signal
	// table is byFirst as an open-addressing hash table on wordHash (the
	// scan hashes each word while splitting the text: no second pass over
	// it, no hashing of a string per lookup); mask is len(table)-1.
	table []vocabSlot
	mask  uint32
	// prefixFirst is true for the first bytes of the prefixes.
	prefixFirst [256]bool
}

type vocabSlot struct {
	word string
	sigs []sigRef
}

// sigRef is a phrase in the table, with the wordHash of its second word
// when a word must equal it (hasSecond: two or more words, the second not
// a prefix): a scan compares that first, in the slot's own memory, and
// most phrases of a common first word ("connection", "invalid",
// "unknown" start 20-37 each) stop there.
type sigRef struct {
	second    uint32
	hasSecond bool
	s         *signal
}

// FNV-1a, 32 bits: the hash of a word, byte by byte.
const (
	hashInit  uint32 = 2166136261
	hashPrime uint32 = 16777619
)

func wordHash(w string) uint32 {
	h := hashInit
	for i := 0; i < len(w); i++ {
		h = (h ^ uint32(w[i])) * hashPrime
	}
	return h
}

// first returns the phrases whose first word is w (h = wordHash(w)).
func (v *vocabulary) first(w string, h uint32) []sigRef {
	for i := h & v.mask; ; i = (i + 1) & v.mask {
		s := &v.table[i]
		if s.word == w {
			return s.sigs
		}
		if s.word == "" {
			return nil
		}
	}
}

var builtinVocab = compileVocab()

func compileVocab() *vocabulary {
	v := &vocabulary{byFirst: map[string][]*signal{}}
	for _, def := range signalDefs {
		for _, p := range def.phrases {
			prefix := strings.HasSuffix(p, "*")
			words := tokens(canonical(strings.TrimSuffix(p, "*")), nil)
			if len(words) == 0 {
				continue
			}
			s := &signal{family: def.family, group: def.group, strong: def.strong, words: words, prefix: prefix, text: p}
			if prefix && len(words) == 1 {
				v.prefixes = append(v.prefixes, s)
				continue
			}
			v.byFirst[words[0]] = append(v.byFirst[words[0]], s)
		}
	}
	size := 1
	for size < 4*len(v.byFirst) {
		size *= 2
	}
	v.table, v.mask = make([]vocabSlot, size), uint32(size-1)
	for w, sigs := range v.byFirst {
		i := wordHash(w) & v.mask
		for v.table[i].word != "" {
			i = (i + 1) & v.mask
		}
		refs := make([]sigRef, len(sigs))
		for k, s := range sigs {
			refs[k].s = s
			if len(s.words) > 2 || len(s.words) == 2 && !s.prefix {
				refs[k].second, refs[k].hasSecond = wordHash(s.words[1]), true
			}
		}
		v.table[i] = vocabSlot{w, refs}
	}
	for _, s := range v.prefixes {
		v.prefixFirst[s.words[0][0]] = true
	}
	return v
}

// Byte classes for split.
const (
	clsOther = iota // ends a word
	clsSep          // ends a word; canonical makes it a space (_ - TAB CR LF SPACE)
	clsUpper        // A-Z: lower-cased; may start a word (camelCase)
	clsWord         // a-z, 0-9, bytes of UTF-8 sequences
)

var byteClass = func() (t [256]uint8) {
	for c := range 256 {
		switch {
		case c >= 'A' && c <= 'Z':
			t[c] = clsUpper
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9', c >= 0x80:
			t[c] = clsWord
		case c == '_', c == '-', c == '\t', c == '\n', c == '\r', c == ' ':
			t[c] = clsSep
		}
	}
	return t
}()

// split sets sc.words to the words of text's canonical form (what
// tokens(canonical(text)) gives) and sc.hashes to their wordHash, in one
// pass: the words are text's letters lower-cased into sc.text, split where
// canonical puts a space (camelCase, acronyms) and at every byte that is
// not a letter, a digit or part of a UTF-8 sequence.
func (sc *scanner) split(text string) {
	if cap(sc.text) < len(text) {
		sc.text = make([]byte, len(text))
	}
	buf := sc.text[:len(text)] // the words' bytes, back to back: never more than text
	words, hashes := sc.words[:0], sc.hashes[:0]
	n, start, h := 0, -1, hashInit
	var prev byte // the previous byte as canonical sees it (a space for clsSep)
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch byteClass[c] {
		case clsUpper:
			// canonical puts a space before a capital after a lower-case
			// letter, and before one starting a word after capitals or
			// digits ("HTTPError", "EC2Throttled").
			if start >= 0 && (byteClass[prev] == clsWord && prev >= 'a' && prev <= 'z' ||
				i+1 < len(text) && text[i+1] >= 'a' && text[i+1] <= 'z' && (byteClass[prev] == clsUpper || prev >= '0' && prev <= '9')) {
				words, hashes = append(words, unsafe.String(&buf[start], n-start)), append(hashes, h)
				start = -1
			}
			if start < 0 {
				start, h = n, hashInit
			}
			c := c + ('a' - 'A')
			buf[n] = c
			n++
			h = (h ^ uint32(c)) * hashPrime
		case clsWord:
			if start < 0 {
				start, h = n, hashInit
			}
			// The rest of the run of lower-case letters and digits at once.
			j := i
			for j < len(text) && byteClass[text[j]] == clsWord {
				h = (h ^ uint32(text[j])) * hashPrime
				j++
			}
			n += copy(buf[n:], text[i:j])
			i, c = j-1, text[j-1]
		case clsSep:
			c = ' '
			fallthrough
		default:
			if start >= 0 {
				words, hashes = append(words, unsafe.String(&buf[start], n-start)), append(hashes, h)
				start = -1
			}
		}
		prev = c
	}
	if start >= 0 {
		words, hashes = append(words, unsafe.String(&buf[start], n-start)), append(hashes, h)
	}
	sc.words, sc.hashes = words, hashes
}

// tokens splits canonical text into words of letters and digits.
func tokens(c string, out []string) []string {
	start := -1
	for i := 0; i <= len(c); i++ {
		alnum := i < len(c) && (c[i] >= 'a' && c[i] <= 'z' || c[i] >= '0' && c[i] <= '9' || c[i] >= 0x80)
		switch {
		case alnum && start < 0:
			start = i
		case !alnum && start >= 0:
			out = append(out, c[start:i])
			start = -1
		}
	}
	return out
}

// hit is one signal found in a text, at word position pos.
type hit struct {
	family, group, phrase string
	strong                bool
	pos                   int
}

// httpContext are words after which a 3-digit number is an HTTP status.
var httpContext = map[string]bool{"http": true, "https": true, "status": true, "code": true, "statuscode": true, "returned": true,
	"responded": true, "response": true, "error": true, "got": true, "received": true, "resulted": true}

// stripURLs blanks out URLs: a host called fraud-check or an endpoint
// /v2/timeout names no failure.
func stripURLs(s string) string {
	i := strings.Index(s, "://")
	if i < 0 {
		return s
	}
	var b strings.Builder
	for {
		start := i
		for start > 0 && (s[start-1] >= 'a' && s[start-1] <= 'z' || s[start-1] >= 'A' && s[start-1] <= 'Z') {
			start--
		}
		end := i + 3
		for end < len(s) && s[end] != ' ' && s[end] != '"' && s[end] != '\'' && s[end] != '\n' && s[end] != ')' && s[end] != ',' {
			end++
		}
		b.WriteString(s[:start])
		b.WriteString(" <url> ")
		s = s[end:]
		if i = strings.Index(s, "://"); i < 0 {
			b.WriteString(s)
			return b.String()
		}
	}
}

// businessEntities are the nouns whose absence is a business outcome (the
// order was deleted), not a configuration problem (the queue is missing).
var businessEntities = map[string]bool{"order": true, "customer": true, "account": true, "user": true, "product": true,
	"payment": true, "invoice": true, "item": true, "sku": true, "cart": true, "subscription": true, "merchant": true,
	"shipment": true, "booking": true, "reservation": true, "member": true, "tenant": true, "contract": true, "policy": true}

// scanner is the scratch space of scans: the canonical text, its words
// and the hits. One scan at a time per scanner; scanners are pooled, so
// reading evidence allocates nothing per text.
type scanner struct {
	text   []byte
	words  []string
	hashes []uint32
	hits   []hit
	// memo holds the hits of texts scanned before with memoOf (failure
	// texts repeat from message to message: the same exception, the same
	// timeout); memoBytes is the size of its keys. Hits hold no reference
	// into a text or into the scanner's buffers (phrases are the
	// vocabulary's or built anew), so they can be handed out again.
	memo      map[string][]hit
	memoOf    *vocabulary
	memoBytes int
}

// Bounds of a scanner's memo: texts longer than maxMemoText are scanned
// each time; the memo starts afresh past maxMemoBytes of texts.
const (
	maxMemoText  = 4 << 10
	maxMemoBytes = 1 << 20
)

var scanners = sync.Pool{New: func() any {
	return &scanner{text: make([]byte, 0, 512), words: make([]string, 0, 64), hashes: make([]uint32, 0, 64), hits: make([]hit, 0, 8)}
}}

func getScanner() *scanner  { return scanners.Get().(*scanner) }
func putScanner(s *scanner) { scanners.Put(s) }

// isNegator reports whether w negates the phrase after it ("not
// retryable", "non-transient").
func isNegator(w string) bool {
	switch w {
	case "non", "not", "never", "without":
		return true
	}
	return false
}

// add records h: at most one hit per family (the strongest, earliest).
func (sc *scanner) add(h hit) {
	for i := range sc.hits {
		if sc.hits[i].family == h.family {
			if h.strong && !sc.hits[i].strong {
				sc.hits[i] = h
			}
			return
		}
	}
	sc.hits = append(sc.hits, h)
}

// scan returns the signals found in text: at most one hit per family (the
// strongest, earliest). The hits live in sc until its next scan.
func (v *vocabulary) scan(text string, sc *scanner) []hit {
	if sc.memoOf != v {
		clear(sc.memo)
		sc.memoOf, sc.memoBytes = v, 0
	}
	if hits, ok := sc.memo[text]; ok {
		sc.hits = append(sc.hits[:0], hits...)
		return sc.hits
	}
	hits := v.scanText(text, sc)
	if len(text) <= maxMemoText {
		if sc.memo == nil {
			sc.memo = make(map[string][]hit)
		}
		if sc.memoBytes+len(text) > maxMemoBytes {
			clear(sc.memo)
			sc.memoBytes = 0
		}
		// The key is a copy: text may be part of a whole body.
		sc.memo[strings.Clone(text)] = slices.Clone(hits)
		sc.memoBytes += len(text)
	}
	return hits
}

// scanText is scan without the memo.
func (v *vocabulary) scanText(text string, sc *scanner) []hit {
	sc.split(stripURLs(text))
	sc.hits = sc.hits[:0]
	words := sc.words
	for i, w := range words {
		negated := i > 0 && isNegator(words[i-1])
		if !negated {
			for _, r := range v.first(w, sc.hashes[i]) {
				if r.hasSecond && (i+1 >= len(words) || sc.hashes[i+1] != r.second) {
					continue // the second word differs: no need to compare the words
				}
				if s := r.s; matchAt(words, i, s) {
					sc.add(hit{s.family, s.group, s.text, s.strong, i})
				}
			}
			if v.prefixFirst[w[0]] {
				for _, s := range v.prefixes {
					if strings.HasPrefix(w, s.words[0]) {
						sc.add(hit{s.family, s.group, s.text, s.strong, i})
					}
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
						sc.add(hit{f, "http", "HTTP " + w, f == FamilyTransient, i})
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
					sc.add(hit{FamilyBusiness, "rejection", words[k] + " … not found", true, k})
					break
				}
			}
		}
		// SQLSTATE codes: "SQLSTATE 40001", "SQL state: 23505".
		if (w == "sqlstate" || (w == "state" && i > 0 && words[i-1] == "sql")) && i+1 < len(words) {
			if f, g := sqlStateFamily(words[i+1]); f != "" {
				sc.add(hit{f, g, "SQLSTATE " + strings.ToUpper(words[i+1]), true, i})
			}
		}
		// MySQL error numbers: "Error 1062 (23000): Duplicate entry",
		// "errno 1213" (mysql2's errno, go-sql-driver's MySQLError).
		if len(w) == 4 && i > 0 && (words[i-1] == "errno" || words[i-1] == "error" || words[i-1] == "err") && isDigits(w) {
			if f, g := mysqlErrnoFamily(w); f != "" {
				sc.add(hit{f, g, "MySQL error " + w, true, i})
			}
		}
		// "exceeds the search-indexer limit": a business limit.
		if strings.HasPrefix(w, "exceed") {
			for k := i + 1; k < len(words) && k <= i+4; k++ {
				if words[k] == "limit" {
					sc.add(hit{FamilyBusiness, "rejection", "exceeds … limit", false, i})
					break
				}
			}
		}
	}
	return sc.hits
}

func matchAt(words []string, i int, s *signal) bool {
	if i+len(s.words) > len(words) {
		return false
	}
	last := len(s.words) - 1
	// The first word is equal: s was found by it (see first).
	for k := 1; k <= last; k++ {
		sw, w := s.words[k], words[i+k]
		if k == last && s.prefix {
			if !strings.HasPrefix(w, sw) {
				return false
			}
		} else if w != sw {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// httpStatusFamily maps an HTTP error status to a family: 408, 425, 429
// and 5xx are transient; any other 4xx is permanent.
func httpStatusFamily(code string) string {
	switch {
	case len(code) != 3 || !isDigits(code):
		return ""
	case code == "408" || code == "425" || code == "429" || code[0] == '5':
		return FamilyTransient
	case code[0] == '4':
		return FamilyPermanent
	}
	return ""
}

// sqlStateFamily maps a SQLSTATE code: class 08 (connection), 40001 and
// 40P01 (serialization failure, deadlock), 53 (insufficient resources),
// 57P0x (server shutting down), 57014 (query canceled: a statement
// timeout) and 55P03 (lock not available) are
// transient; classes 22 (data exception) and 23 (integrity constraint
// violation) are permanent.
func sqlStateFamily(code string) (string, string) {
	if len(code) != 5 {
		return "", ""
	}
	switch {
	case strings.HasPrefix(code, "08"), code == "40001", code == "40p01", strings.HasPrefix(code, "53"),
		strings.HasPrefix(code, "57p0"), code == "55p03", code == "57014":
		return FamilyTransient, "database"
	case strings.HasPrefix(code, "22"), strings.HasPrefix(code, "23"):
		return FamilyPermanent, "sql-data"
	}
	return "", ""
}

// mysqlErrnoFamily maps a MySQL/MariaDB server or client error number:
// lock waits, deadlocks, connection limits and lost connections are
// transient; duplicate keys, NULLs, values too long or out of range and
// foreign keys are permanent; access and missing tables are configuration.
func mysqlErrnoFamily(n string) (string, string) {
	switch n {
	case "1205", "1213", "1040", "1203", "2002", "2003", "2006", "2013", "1053", "1317", "3572", "1927", "1158", "1159", "1160", "1161", "2055":
		return FamilyTransient, "database"
	case "1062", "1048", "1406", "1452", "1451", "1366", "1264", "1292", "1364", "3819", "1216", "1217", "1169", "1265", "3140":
		return FamilyPermanent, "sql-data"
	case "1045", "1044", "1142", "1143", "1146", "1049", "1227":
		return FamilyConfig, "configuration"
	}
	return "", ""
}

// canonical lower-cases s and splits camelCase, snake_case and kebab-case
// into space-separated words: "TransientDatabaseTimeout" and
// "transient_database-timeout" both become "transient database timeout".
// An acronym ends before a capitalised word ("HTTPError" -> "http error",
// "JSONDecodeError" -> "json decode error"); runs of capitals stay one
// word ("ECONNRESET").
func canonical(s string) string { return string(appendCanonical(nil, s)) }

// appendCanonical appends the canonical form of s (see canonical) to b.
func appendCanonical(b []byte, s string) []byte {
	var prev byte
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z':
			lowerNext := i+1 < len(s) && s[i+1] >= 'a' && s[i+1] <= 'z'
			if prev >= 'a' && prev <= 'z' || (lowerNext && (prev >= 'A' && prev <= 'Z' || prev >= '0' && prev <= '9')) {
				b = append(b, ' ')
			}
			b = append(b, c+('a'-'A'))
		case c == '_' || c == '-' || c == '\t' || c == '\n' || c == '\r':
			if prev != ' ' {
				b = append(b, ' ')
			}
			c = ' '
		case c == ' ':
			if prev != ' ' {
				b = append(b, ' ')
			}
		default:
			b = append(b, c)
		}
		prev = c
	}
	return b
}
