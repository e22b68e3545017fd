"""moto_server for the local stack, with one fix: a queue's message list is
rebuilt by delete_message under the queue's own lock.

moto 5.2.1's SQS Queue.delete_message builds a new message list without the
deleted message and assigns it, without a lock. moto_server answers each
request on a thread of its own, so two DeleteMessageBatch calls at the same
time (a redrive's workers make them) can each write back a list that still
holds the other's message: a deleted message comes back, in flight and then
visible. AWS never does that. docs/emulators.md (row 28) says so, and
internal/emulatorfacts TestConcurrentDeletesDeleteEverything fails without
this fix. Everything else is moto_server as installed: same arguments.
"""

import sys

from moto.sqs import models

_delete_message = models.Queue.delete_message
_purge_queue = models.SQSBackend.purge_queue


def delete_message(self, receipt_handle):
    with self._messages_lock:  # a Condition over an RLock: add_message takes it too
        return _delete_message(self, receipt_handle)


def purge_queue(self, queue_name):
    queue = self.get_queue(queue_name)
    with queue._messages_lock:
        return _purge_queue(self, queue_name)


models.Queue.delete_message = delete_message
models.SQSBackend.purge_queue = purge_queue

if __name__ == "__main__":
    from moto.server import main

    main(sys.argv[1:])
