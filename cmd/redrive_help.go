package cmd

// redriveLong is the --help text of `dlqctl redrive`.
const redriveLong = `Move messages from a dead-letter queue back to their source queues (or to a
recovery queue), safely:

  * exact copies: the body byte for byte, every message attribute with its
    data type, the FIFO message group, and a deduplication id derived from
    the run id and the original message id (a FIFO destination drops a copy
    re-sent within 5 minutes after a crash);
  * a message leaves the DLQ only after its copy was accepted by the
    destination and recorded (fsync) in the run's journal under --state-dir;
  * a redrive marker attribute (dlqctl-redrive: run id, original id, redrive
    count) unless the message already has 10 attributes; --max-redrives
    skips messages redriven that many times before;
  * too-large messages, messages without a known source, and those not
    selected are skipped and reported, never changed;
  * Ctrl-C / SIGTERM: stop receiving, finish the batch in flight, release
    the rest (visibility 0), print the summary, exit 130.

The run says "completed" (exit 0) only when the DLQ was drained and
nothing is left that it did not account for: SQS had nothing more to give
it (an empty long poll), never the queue's approximate counts, which trail
by up to a minute (when they disagree at the end, the summary notes it;
exit 0). Messages a receive whose answer was lost may have taken, and
those a killed dlqctl process still hides (the hold ledger in --state-dir,
same host), are waited for up to their visibility timeout and moved
(--wait-inflight, default on; --wait-inflight=false reports them, exit 4). A send whose
answer was lost and that the SDK sent again may have delivered its
messages twice: the summary counts them (maybe_twice). On a FIFO DLQ a message the
selection skips is held until the end, so SQS hands out nothing more of its
group: later messages of that group are not moved ahead of it, and the run
exits 4 naming the blocked groups. A message whose lease was lost is never
counted as moved; it is deleted when received again, without a second send.
A FIFO group the queue hands out of order (after a receive whose answer was
lost; moto does, AWS keeps the order) ends the run partial (exit 4), naming
the groups.

A Kafka dead-letter topic (kafka://HOST:PORT/TOPIC) is redriven to the
original topic named in each record's headers (or --to kafka://…/TOPIC), key
kept, dead-letter headers dropped, through the same engine and run journal
as every broker (one worker, batches of up to 500 records: --concurrency is
refused; run more processes to spread the partitions); dlqctl's consumer
group (--kafka-group) commits past what was produced, replayed records land
after newer records with the same key, and --max-dest-lag GROUP:N and
--exactly-once apply (docs/kafka.md). A re-run
after a kill -9 waits for the killed run's group members (recorded in
--state-dir) to time out of the group — their session timeout + 5 s, said on
stderr — then takes their partitions; it names the records the killed run
produced and never committed (its write-ahead intent in --state-dir) as
possibly delivered twice (maybe_twice_messages), or, with --exactly-once,
says that its transaction was aborted. On RabbitMQ a killed run's
unacknowledged deliveries return to the DLQ as soon as its connection
closes: a re-run has nothing to wait for.

--to source (default) sends each message to the queue named by its
DeadLetterQueueSourceArn (or the DLQ's only source queue); --to QUEUE sends
everything to one queue (name, URL or ARN).

A DLQ that no SQS queue names as its dead-letter target — the DLQ of Lambda
asynchronous invocations (DeadLetterConfig or on-failure destination), of an
SNS subscription (RedrivePolicy) or of an EventBridge rule target — is
redriven --to source to each message's origin, found from its format and the
account's configuration: a function is invoked again asynchronously (202
accepted); a subscription gets what SNS delivers to its endpoint, at that
endpoint only (SQS: SendMessage; Lambda: the SNS event), never a Publish to
the topic; a target gets the event at its SQS queue or Lambda function,
never PutEvents to the bus. A message whose origin is unknown or ambiguous,
or that cannot be replayed faithfully (an HTTP subscription, a target with
an input transformer, a DynamoDB or Kafka stream batch pointer, a Kinesis
batch past its retention — a Kinesis batch still in the stream is read back
and invoked as the Kinesis event), stays in the DLQ and is
reported ("cannot replay: …", exit 4). --origin ARN names the function or
subscription for messages that do not name their origin themselves
('dlqctl help redrive.md', "DLQs fed by Lambda, SNS and EventBridge").

--dry-run scans the DLQ without changing anything and prints the plan: how
many per destination and class, what would be skipped and why, and the
estimated duration at --rate / --ramp.

--canary N moves N matching messages, then watches the DLQ for --verify-for:
it passes (exit 0) when none came back, fails (exit 3) when some did. With
--verify-drain the destination must also have consumed them. Without
--verify-for the watch is computed per broker as the time a message that
always fails needs to be dead-lettered again, stated on stderr and in the
verdict (window_seconds, window_reason): SQS: maxReceiveCount × the
destination's visibility timeout, + 30 s; RabbitMQ: the message TTLs on the
way from the destination queue into the DLQ (its own and its retry
queues'), + 30 s (quorum delivery limits and rejections dead-letter at
once); Kafka: the delays of Spring retry topics named with them
(TOPIC-retry-1000, …), + 30 s. When no destination dead-letters into the
DLQ the watch is 2m, said so; when the broker cannot know (a Kafka
dead-letter topic without such retry topics, a RabbitMQ server without its
management API) --canary needs --verify-for (exit 2, nothing moved). A
shorter --verify-for is warned about, since its PASS proves less.

--rate R sends at most R messages per second (a batch of 10 takes 10
tokens); --ramp R1,R2,... steps the rate every --ramp-every while the guards
hold. Both are per process.

Several processes can share one DLQ (on one host or several), each with its
own --state-dir: SQS hands each message to one of them. --rate-share I/N on
the I-th of N processes divides --rate and every --ramp step by N, so the N
keep to one budget, and tells the run it has peers: it ends when nothing is
visible for it, and reports the messages its peers hold (in_flight_at_peers)
instead of waiting for them — unless one of its own receives may have lost
its answer, which it waits out. The shared redrive is complete when every
process exits 0. --canary and --engine native run alone. See 'dlqctl help scale'. Guards: --max-returns P (share of moved messages seen back in the DLQ,
e.g. 5%) and --max-dest-backlog N (visible messages in a destination);
--on-guard abort stops at once, pause holds sending until the condition
clears or --pause-timeout passes. A tripped guard exits 3.

Exit 1 is an error the run could not go on after (SQS or S3 still failing
after retries, the journal not writable): what it moved is in its journal —
'dlqctl runs', then 'dlqctl redrive resume'. Exit 2: bad flags, no
credentials or region, or AccessDenied (naming the IAM action), nothing
changed. Exit 4: some messages refused, unknown or not yet deleted.

Every run has an id and a journal. After a crash or kill, 'dlqctl redrive
resume RUN_ID' (or running the same command again) deletes what was already
sent without sending it again and moves the rest. The journal records each
batch's ids before sending it: messages the dead process was sending and
never recorded are sent again and named as possibly delivered twice ("resumed
run R: N message(s) may have been delivered twice", maybe_twice_messages in
-o json, with the orig of each copy's marker: the consumer's deduplication
key; 'dlqctl help redrive.md'). 'dlqctl runs' lists runs.

--transform EXPR (or --transform-file F) repairs each selected message on
its way out: a jq expression over the message record, as --filter,
returning the record to send (.json re-encoded, or .body, and .attributes;
Kafka: .system.kafka.key and .system.kafka.headers too). It needs --archive-originals s3://BUCKET/PREFIX: each
original is archived there (verified parts and a manifest, as 'archive'
writes) and recorded in the journal before its repaired copy is sent. A
message the expression fails on (or makes too large, not JSON where JSON
was, or with too many attributes) stays in the DLQ, counted per error, exit
4; one failing on every message exits 2, nothing moved. Each copy carries
a dlqctl-transform attribute (run, expression SHA-256, original id).
--dry-run shows a before/after diff; 'dlqctl restore MANIFEST' undoes it
('dlqctl help repair-and-replay').

--engine native uses SQS's own move task (StartMessageMoveTask): the whole
DLQ, to the sources or one queue, at --rate up to 500/s; --ramp restarts it
at each step. It cannot filter, canary or stop at --max. 'dlqctl redrive
status DLQ' and 'dlqctl redrive cancel DLQ' show and cancel move tasks.

A run that changes queues needs --yes, or a confirmation on a terminal.

` + SelectionHelp
