// Local SQS emulator for dlqctl development and tests (local-aws-sqs 2.0.2).
//
// Usage: node scripts/sqs/server.mjs [PORT]
//        (or DLQCTL_SQS_PORT=PORT node scripts/sqs/server.mjs)
//
// PORT 0 picks a free port. Once listening, one line is printed to stdout:
//   local-aws-sqs listening on http://127.0.0.1:PORT
// scripts/stack.sh waits for the server by calling ListQueues, not by parsing
// that line.
//
// Emulator facts worth knowing (see also GUIDE.md section 4):
//  - Dead-lettering happens when a received message's visibility timeout
//    expires and its ApproximateReceiveCount >= maxReceiveCount. Receiving
//    with VisibilityTimeout=0 maxReceiveCount times moves it almost at once.
//    The DLQ copy keeps MessageId, body and message attributes, gets the
//    DeadLetterQueueSourceArn system attribute, but a NEW SentTimestamp and
//    ApproximateReceiveCount 0 (real SQS keeps the original enqueue time on
//    standard queues).
//  - ReceiveMessage ignores MessageSystemAttributeNames; send the older
//    AttributeNames ["All"] as well.
//  - The in-flight limit check counts visible messages, so a queue holding
//    ~120k visible messages answers OverLimit on receive.
//  - CreateQueue ignores VisibilityTimeout "0" (the queue gets 30);
//    SetQueueAttributes honours it. (aws-sdk-go-v2 also drops
//    VisibilityTimeout: 0 from ReceiveMessage, so per-request 0 is impossible.)
//  - ChangeMessageVisibility increments ApproximateReceiveCount, so releasing
//    a message inflates its count, and on a queue with a RedrivePolicy a
//    release can dead-letter it.
//  - FIFO receives do not lock a message group while one of its messages is
//    in flight.
//  - Every new message counts as "delayed" until the next event-loop tick
//    (even with DelaySeconds 0); ApproximateNumberOfMessages counts in-flight
//    messages too; PurgeQueue clears the queue only 60 s later.
//  - CreateQueue on an existing queue compares tags as a JSON string
//    (key order matters) and answers QueueAlreadyExists on any difference.
//  - Size limits are checked on JS string length, not UTF-8 bytes.
//  - emulateQueueCreationLifecycle is off so tests may delete and re-create a
//    queue with the same name at once.
//  - State is in memory only: stopping the server loses every queue.
import { createSqsServer } from "local-aws-sqs";

const raw = process.argv[2] ?? process.env.DLQCTL_SQS_PORT ?? "9324";
const port = Number.parseInt(raw, 10);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`server.mjs: invalid port ${JSON.stringify(raw)}`);
  process.exit(2);
}
const hostname = process.env.DLQCTL_SQS_HOST ?? "127.0.0.1";

process.on("uncaughtException", (err) => {
  // listen errors (EADDRINUSE) surface here; the library never rejects.
  console.error(`server.mjs: ${err?.stack ?? err}`);
  process.exit(1);
});

const server = await createSqsServer({
  port,
  hostname,
  region: "us-east-1",
  accountId: "123456789012",
  emulateQueueCreationLifecycle: false,
  emulateLazyQueues: false,
  validateDlqDestination: true,
});

const addr = server.address();
console.log(`local-aws-sqs listening on http://${hostname}:${typeof addr === "object" && addr ? addr.port : port}`);

let closing = false;
const shutdown = (signal) => {
  if (closing) return;
  closing = true;
  console.log(`local-aws-sqs: ${signal}, shutting down`);
  server.close(() => process.exit(0));
  // Keep-alive connections can hold close() open; do not wait for them.
  setTimeout(() => process.exit(0), 1000).unref();
  server.closeAllConnections?.();
};
process.on("SIGTERM", () => shutdown("SIGTERM"));
process.on("SIGINT", () => shutdown("SIGINT"));
