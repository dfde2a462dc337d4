// Command ferretdb runs an embedded FerretDB v1 (MongoDB wire protocol) server
// backed by SQLite, for local development and tests.
//
// It exists because `go install github.com/FerretDB/FerretDB/cmd/ferretdb@v1.24.2`
// produces a binary that panics at start-up (its build/version/version.txt is
// generated and not part of the published module). The embeddable package
// github.com/FerretDB/FerretDB/ferretdb does not read that file when the main
// module is not FerretDB itself, so wrapping it here avoids the problem.
//
// Usage:
//
//	ferretdb -listen 127.0.0.1:27017 -sqlite-dir /tmp/estate-engines/ferretdb
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/FerretDB/FerretDB/ferretdb"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:27017", "TCP address to listen on (host:port)")
	sqliteDir := flag.String("sqlite-dir", "data", "directory holding the SQLite database files (one file per database)")
	logLevel := flag.String("log-level", "info", "log level: debug, info, warn or error")
	flag.Parse()

	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(os.Stderr, "ferretdb: invalid -log-level %q: %v\n", *logLevel, err)
		os.Exit(2)
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(logger)

	dir, err := filepath.Abs(*sqliteDir)
	if err != nil {
		logger.Error("invalid -sqlite-dir", "error", err)
		os.Exit(2)
	}
	if err = os.MkdirAll(dir, 0o755); err != nil {
		logger.Error("cannot create -sqlite-dir", "error", err)
		os.Exit(1)
	}

	// FerretDB expects a SQLite URI naming a directory; it must end with a slash.
	sqliteURL := (&url.URL{Scheme: "file", Opaque: filepath.ToSlash(dir) + "/"}).String()

	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: *listen},
		Logger:    logger,
		Handler:   "sqlite",
		SQLiteURL: sqliteURL,
	})
	if err != nil {
		logger.Error("cannot create FerretDB", "error", err)
		os.Exit(1)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	logger.Info("starting FerretDB", "listen", *listen, "sqlite", sqliteURL, "pid", os.Getpid())

	if err = f.Run(ctx); err != nil {
		logger.Error("FerretDB stopped with error", "error", err)
		os.Exit(1)
	}

	logger.Info("FerretDB stopped")
}
