// Command ferretdb runs an embedded FerretDB v1 (MongoDB wire protocol) server
// backed by SQLite, for local development and tests.
//
// It exists because `go install github.com/FerretDB/FerretDB/cmd/ferretdb@v1.24.2`
// produces a binary that panics at start-up: the command reads the generated
// build/version/version.txt, which is not part of the published module. The
// embeddable package github.com/FerretDB/FerretDB/ferretdb skips that file when
// the main module is not FerretDB itself, so wrapping it here avoids the problem.
// We fill in the FerretDB version from the module build info instead, so that
// `buildInfo` reports the real version rather than "unknown".
//
// Write serialisation: FerretDB v1 implements update/findAndModify as
// "query the documents, apply the operators in Go, write them back" without any
// transaction or lock, so concurrent updates of the same document lose writes
// ($inc counters, optimistic-concurrency checks, "claim a job" updates all break
// under parallel load). By default (-serialize-writes=true) this program puts a
// tiny MongoDB wire-protocol relay in front of FerretDB: FerretDB listens on a
// private Unix socket and the relay forwards every message unchanged, holding one
// global mutex while an insert/update/delete/findAndModify command is executed.
// Reads are not serialised. See docs/engines.md.
//
// Usage:
//
//	ferretdb -listen 127.0.0.1:27017 -sqlite-dir /tmp/estate-engines/ferretdb
package main

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"sync"
	"syscall"
	"time"

	"github.com/FerretDB/FerretDB/build/version"
	"github.com/FerretDB/FerretDB/ferretdb"
)

const ferretdbModule = "github.com/FerretDB/FerretDB"

func main() {
	listen := flag.String("listen", "127.0.0.1:27017", "TCP address to listen on (host:port)")
	sqliteDir := flag.String("sqlite-dir", "data", "directory holding the SQLite database files (one file per database)")
	logLevel := flag.String("log-level", "info", "log level: debug, info, warn or error")
	serialize := flag.Bool("serialize-writes", true,
		"serialise insert/update/delete/findAndModify commands through one lock (avoids lost updates)")
	flag.Parse()

	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(os.Stderr, "ferretdb: invalid -log-level %q: %v\n", *logLevel, err)
		os.Exit(2)
	}

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(logger)

	if err := run(logger, *listen, *sqliteDir, *serialize); err != nil {
		logger.Error("ferretdb failed", "error", err)
		os.Exit(1)
	}
}

func run(logger *slog.Logger, listen, sqliteDir string, serialize bool) error {
	dir, err := filepath.Abs(sqliteDir)
	if err != nil {
		return fmt.Errorf("invalid -sqlite-dir: %w", err)
	}

	if err = os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot create -sqlite-dir: %w", err)
	}

	// FerretDB expects a SQLite URI naming an existing directory, ending with a slash.
	sqliteURL := (&url.URL{Scheme: "file", Opaque: filepath.ToSlash(dir) + "/"}).String()

	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range bi.Deps {
			if dep.Path == ferretdbModule {
				version.Get().Version = dep.Version
			}
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	listener := ferretdb.ListenerConfig{TCP: listen}

	var socket string
	if serialize {
		// Short path: Unix socket paths are limited to ~100 bytes.
		socket = filepath.Join(os.TempDir(), fmt.Sprintf("estate-ferretdb-%d.sock", os.Getpid()))
		_ = os.Remove(socket)
		listener = ferretdb.ListenerConfig{Unix: socket}
	}

	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  listener,
		Logger:    logger,
		Handler:   "sqlite",
		SQLiteURL: sqliteURL,
	})
	if err != nil {
		return fmt.Errorf("cannot create FerretDB: %w", err)
	}

	done := make(chan error, 1)

	go func() {
		done <- f.Run(ctx)
	}()

	if !serialize {
		logger.Info("FerretDB started", "version", version.Get().Version, "listen", listen, "sqlite", sqliteURL, "pid", os.Getpid())
		<-ctx.Done()

		return <-done
	}

	defer os.Remove(socket)

	r := &relay{logger: logger, backend: socket, conns: map[net.Conn]struct{}{}}

	// ferretdb.New has already bound the Unix socket; bind the public address now.
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		stop()
		<-done

		return fmt.Errorf("cannot listen on %s: %w", listen, err)
	}

	logger.Info("FerretDB started",
		"version", version.Get().Version, "listen", listen, "sqlite", sqliteURL,
		"backend", socket, "serialize_writes", true, "pid", os.Getpid(),
	)

	go func() {
		<-ctx.Done()
		_ = ln.Close()
		r.closeAll()
	}()

	r.serve(ctx, ln)

	err = <-done
	r.wg.Wait()
	logger.Info("FerretDB stopped")

	return err
}

// relay forwards MongoDB wire protocol messages between clients and FerretDB,
// serialising write commands.
type relay struct {
	logger  *slog.Logger
	backend string

	writeMu sync.Mutex // held while a write command runs in FerretDB

	connsMu sync.Mutex
	conns   map[net.Conn]struct{}
	closed  bool

	wg sync.WaitGroup
}

// writeCommands are the commands that read and then modify documents.
var writeCommands = map[string]bool{
	"insert":        true,
	"update":        true,
	"delete":        true,
	"findAndModify": true,
	"findandmodify": true,
}

const (
	msgHeaderLen = 16
	maxMsgLen    = 48_000_000 // FerretDB's wire.MaxMsgLen

	opCodeMsg = 2013

	opMsgChecksumPresent = 1 << 0
)

func (r *relay) track(c net.Conn) bool {
	r.connsMu.Lock()
	defer r.connsMu.Unlock()

	if r.closed {
		return false
	}

	r.conns[c] = struct{}{}

	return true
}

func (r *relay) untrack(c net.Conn) {
	r.connsMu.Lock()
	defer r.connsMu.Unlock()

	delete(r.conns, c)
}

func (r *relay) closeAll() {
	r.connsMu.Lock()
	defer r.connsMu.Unlock()

	r.closed = true

	for c := range r.conns {
		_ = c.Close()
	}
}

func (r *relay) serve(ctx context.Context, ln net.Listener) {
	for {
		client, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}

			r.logger.Warn("accept failed", "error", err)
			time.Sleep(50 * time.Millisecond)

			continue
		}

		r.wg.Add(1)

		go func() {
			defer r.wg.Done()
			r.handle(client)
		}()
	}
}

func (r *relay) handle(client net.Conn) {
	defer client.Close()

	if !r.track(client) {
		return
	}
	defer r.untrack(client)

	backend, err := net.Dial("unix", r.backend)
	if err != nil {
		r.logger.Error("cannot connect to FerretDB backend", "error", err)
		return
	}
	defer backend.Close()

	if !r.track(backend) {
		return
	}
	defer r.untrack(backend)

	cr := bufio.NewReaderSize(client, 64*1024)
	br := bufio.NewReaderSize(backend, 64*1024)

	for {
		req, err := readMessage(cr)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				r.logger.Debug("client connection closed", "error", err)
			}

			return
		}

		res, err := r.roundTrip(backend, br, req)
		if err != nil {
			r.logger.Debug("backend connection closed", "error", err)
			return
		}

		if _, err = client.Write(res); err != nil {
			return
		}
	}
}

// roundTrip sends one request to FerretDB and reads its single response
// (FerretDB v1 answers every request with exactly one message).
func (r *relay) roundTrip(backend net.Conn, br *bufio.Reader, req []byte) ([]byte, error) {
	if isWriteCommand(req) {
		r.writeMu.Lock()
		defer r.writeMu.Unlock()
	}

	if _, err := backend.Write(req); err != nil {
		return nil, err
	}

	return readMessage(br)
}

// readMessage reads one complete wire protocol message (header included).
func readMessage(rd *bufio.Reader) ([]byte, error) {
	var header [msgHeaderLen]byte
	if _, err := io.ReadFull(rd, header[:]); err != nil {
		return nil, err
	}

	n := int32(binary.LittleEndian.Uint32(header[0:4]))
	if n < msgHeaderLen || n > maxMsgLen {
		return nil, fmt.Errorf("invalid message length %d", n)
	}

	msg := make([]byte, n)
	copy(msg, header[:])

	if _, err := io.ReadFull(rd, msg[msgHeaderLen:]); err != nil {
		return nil, err
	}

	return msg, nil
}

// isWriteCommand reports whether msg is an OP_MSG whose command (the first key
// of its body section) is one of writeCommands.
func isWriteCommand(msg []byte) bool {
	if len(msg) < msgHeaderLen+4 || binary.LittleEndian.Uint32(msg[12:16]) != opCodeMsg {
		return false
	}

	flags := binary.LittleEndian.Uint32(msg[16:20])
	end := len(msg)

	if flags&opMsgChecksumPresent != 0 {
		end -= 4
	}

	for pos := 20; pos < end; {
		kind := msg[pos]
		pos++

		if pos+4 > end {
			return false
		}

		size := int(int32(binary.LittleEndian.Uint32(msg[pos : pos+4])))
		if size < 5 || pos+size > end {
			return false
		}

		if kind == 0 {
			// BSON document: int32 size, then elements: type byte, cstring key, value.
			doc := msg[pos : pos+size]
			if doc[4] == 0 {
				return false
			}

			key := doc[5:]
			for i, b := range key {
				if b == 0 {
					return writeCommands[string(key[:i])]
				}
			}

			return false
		}

		// kind 1: document sequence (int32 size includes itself); skip it.
		pos += size
	}

	return false
}
