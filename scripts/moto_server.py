"""moto_server for the local stack, with two fixes, both taking the queue's
own lock (a Condition over an RLock) where moto 5.2.1 takes none:

1. delete_message (and purge_queue) rebuild the queue's message list under
   it.
2. receive_message and change_message_visibility run under it.

moto 5.2.1's SQS Queue.delete_message builds a new message list without the
deleted message and assigns it, without a lock. moto_server answers each
request on a thread of its own, so two DeleteMessageBatch calls at the same
time (a redrive's workers make them) can each write back a list that still
holds the other's message: a deleted message comes back, in flight and then
visible. AWS never does that. docs/emulators.md (row 28) says so, and
internal/emulatorfacts TestConcurrentDeletesDeleteEverything fails without
this fix.

receive_message walks the queue's pending-message set (to find the
message groups in flight) while another receive or a visibility change
on the same queue adds to it or removes from it: "RuntimeError: Set
changed size during iteration", answered as HTTP 500 after the messages
it had already marked received. The SDK retries the 500 and the first
receive's messages stay in flight, received by nobody: a lost receive.
AWS receives atomically. A long poll still waits without the lock
(Condition.wait releases it). docs/emulators.md (row 29) says so, and
internal/emulatorfacts TestConcurrentReceivesLoseNothing fails without
this fix.

Everything else is moto_server as installed: same arguments.
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


_receive_message = models.SQSBackend.receive_message
_change_message_visibility = models.SQSBackend.change_message_visibility


def receive_message(self, queue_name, *args, **kwargs):
    queue = self.get_queue(queue_name)
    with queue._messages_lock:
        return _receive_message(self, queue_name, *args, **kwargs)


def change_message_visibility(self, queue_name, *args, **kwargs):
    queue = self.get_queue(queue_name)
    with queue._messages_lock:
        return _change_message_visibility(self, queue_name, *args, **kwargs)


models.Queue.delete_message = delete_message
models.SQSBackend.purge_queue = purge_queue
models.SQSBackend.receive_message = receive_message
models.SQSBackend.change_message_visibility = change_message_visibility

if __name__ == "__main__":
    from moto.server import main

    main(sys.argv[1:])
