// Command boxoffice is the box office's one binary: it serves the site, runs
// the background workers (admitter, expiry, outbox relay) and has the
// operator's commands.
//
//	boxoffice [serve]                               serve the site (the default)
//	boxoffice migrate                               apply the database migrations
//	boxoffice create-admin --email E --password P   make an admin account
//	boxoffice seed-demo [--password P]              demo accounts, venues and events (empty database only)
//	boxoffice verify-draw URL                       check an event's published pre-queue draw
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	_ "time/tzdata" // event time zones work on machines without zone files
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	setGCDefaults()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "boxoffice:", err)
		os.Exit(1)
	}
}

// run is the whole program: it parses the command and configuration, and
// returns when the command is done or ctx is cancelled. Tests call it too.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 {
		cmd, args = args[0], args[1:]
	}
	if cmd == "verify-draw" { // anyone's check: no configuration needed
		return verifyDraw(ctx, args, stdout)
	}
	cfg, err := LoadConfig(getenv)
	if err != nil {
		return err
	}
	logger := newLogger(stderr, cfg.LogLevel)
	switch cmd {
	case "serve":
		return serve(ctx, cfg, logger, stdout)
	case "migrate":
		return migrate(ctx, cfg, stdout)
	case "create-admin":
		return createAdmin(ctx, cfg, args, stdout)
	case "seed-demo":
		return seedDemo(ctx, cfg, args, stdout)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	return fmt.Errorf("unknown command %q\n%s", cmd, usage)
}

const usage = `usage:
  boxoffice [serve]                              serve the site (the default)
  boxoffice migrate                              apply the database migrations
  boxoffice create-admin --email E --password P  make an admin account
  boxoffice seed-demo [--password P]             demo accounts, venues and events (empty database only)
  boxoffice verify-draw URL                      check an event's published pre-queue draw (URL: .../events/{id}/draw)
configuration comes from the environment: see the README.
`
