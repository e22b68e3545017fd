// Package emulatorfacts holds no code: its tests pin, against the running
// local servers (scripts/stack.sh: local-aws-sqs 2.0.2, moto_server 5.2.1,
// versitygw v1.8.0), the behaviours that docs/emulators.md lists and that
// dlqctl's code or tests rely on. Each test observes one behaviour on every
// server and fails when a server stops behaving as documented, so an
// emulator upgrade that changes a fact shows up here first, not as a
// puzzling failure elsewhere.
package emulatorfacts
