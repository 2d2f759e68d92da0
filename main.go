// Command outboxtop relays a PostgreSQL transactional outbox to Kafka and is its
// on-call console. See README.md; the commands live in internal/cmd.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/outboxtop/outboxtop/internal/cmd"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cmd.Run(ctx, os.Args[1:], cmd.IO{In: os.Stdin, Out: os.Stdout, Err: os.Stderr})
	stop()
	os.Exit(code)
}
