// Command ferretdb runs an embedded FerretDB v1 (MongoDB wire protocol) server
// backed by PostgreSQL (default) or SQLite, for local development and tests.
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
// lock per collection while an insert/update/delete/findAndModify command on it is executed.
// Reads are not serialised. See docs/engines.md.
//
// The PostgreSQL backend pushes equality filters down to PostgreSQL, served by the
// GIN indexes scripts/engines/ferretdb-indexes.sql adds; the SQLite backend scans
// whole collections for anything but _id. Both lose
// updates without the relay, so the relay is on for both. See docs/engines.md.
//
// Usage:
//
//	ferretdb -listen 127.0.0.1:27017 -postgresql-url postgres://127.0.0.1:5433/ferretdb
//	ferretdb -listen 127.0.0.1:27017 -handler sqlite -sqlite-dir /tmp/estate-engines/ferretdb
//	ferretdb -debug-addr 127.0.0.1:8088 ...  (CPU profile: go tool pprof http://127.0.0.1:8088/debug/pprof/profile)
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
	"net/http"
	_ "net/http/pprof" // served on -debug-addr only
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
	handler := flag.String("handler", "postgresql", "backend: postgresql or sqlite")
	postgresqlURL := flag.String("postgresql-url", "postgres://127.0.0.1:5432/ferretdb",
		"PostgreSQL connection URL (postgresql handler)")
	sqliteDir := flag.String("sqlite-dir", "data", "directory holding the SQLite database files (sqlite handler)")
	logLevel := flag.String("log-level", "info", "log level: debug, info, warn or error")
	serialize := flag.Bool("serialize-writes", true,
		"serialise insert/update/delete/findAndModify commands through one lock (avoids lost updates)")
	debugAddr := flag.String("debug-addr", "",
		"TCP address (host:port) serving Go's profiles under /debug/pprof/; empty: none")
	flag.Parse()

	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		fmt.Fprintf(os.Stderr, "ferretdb: invalid -log-level %q: %v\n", *logLevel, err)
		os.Exit(2)
	}

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	slog.SetDefault(logger)

	var backend backendConfig
	switch *handler {
	case "postgresql":
		backend = backendConfig{handler: "postgresql", postgresqlURL: *postgresqlURL}
	case "sqlite":
		dir, err := filepath.Abs(*sqliteDir)
		if err == nil {
			err = os.MkdirAll(dir, 0o755)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "ferretdb: invalid -sqlite-dir %q: %v\n", *sqliteDir, err)
			os.Exit(2)
		}
		// FerretDB expects a SQLite URI naming an existing directory, ending with a slash.
		backend = backendConfig{handler: "sqlite", sqliteURL: (&url.URL{Scheme: "file", Opaque: filepath.ToSlash(dir) + "/"}).String()}
	default:
		fmt.Fprintf(os.Stderr, "ferretdb: invalid -handler %q (expected postgresql or sqlite)\n", *handler)
		os.Exit(2)
	}

	if *debugAddr != "" {
		go func() {
			logger.Info("profiles served", "url", "http://"+*debugAddr+"/debug/pprof/")
			if err := http.ListenAndServe(*debugAddr, nil); err != nil { //nolint:gosec // loopback, engine profiling
				logger.Error("cannot serve profiles", "error", err)
			}
		}()
	}

	if err := run(logger, *listen, backend, *serialize); err != nil {
		logger.Error("ferretdb failed", "error", err)
		os.Exit(1)
	}
}

// backendConfig names the storage FerretDB runs on.
type backendConfig struct {
	handler       string
	postgresqlURL string
	sqliteURL     string
}

// describe is what the start-up log says about the backend (no credentials).
func (b backendConfig) describe() string {
	if b.handler == "sqlite" {
		return b.sqliteURL
	}

	if u, err := url.Parse(b.postgresqlURL); err == nil {
		return u.Redacted()
	}

	return "postgresql"
}

func run(logger *slog.Logger, listen string, backend backendConfig, serialize bool) error {
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
		Listener:      listener,
		Logger:        logger,
		Handler:       backend.handler,
		PostgreSQLURL: backend.postgresqlURL,
		SQLiteURL:     backend.sqliteURL,
	})
	if err != nil {
		return fmt.Errorf("cannot create FerretDB: %w", err)
	}

	done := make(chan error, 1)

	go func() {
		done <- f.Run(ctx)
	}()

	if !serialize {
		logger.Info("FerretDB started", "version", version.Get().Version, "listen", listen, "backend", backend.describe(), "pid", os.Getpid())
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
		"version", version.Get().Version, "listen", listen, "backend", backend.describe(),
		"socket", socket, "serialize_writes", true, "pid", os.Getpid(),
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

	// One lock per collection, held while a write command on it runs in FerretDB: writes to
	// different collections go on in parallel, writes to one collection one at a time.
	locksMu sync.Mutex
	locks   map[string]*sync.Mutex

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
	if collection, ok := writeCommandTarget(req); ok {
		mu := r.lockFor(collection)
		mu.Lock()
		defer mu.Unlock()
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

// lockFor returns the write lock of a collection (created on first use; collections are few).
func (r *relay) lockFor(collection string) *sync.Mutex {
	r.locksMu.Lock()
	defer r.locksMu.Unlock()

	if r.locks == nil {
		r.locks = map[string]*sync.Mutex{}
	}

	mu, ok := r.locks[collection]
	if !ok {
		mu = &sync.Mutex{}
		r.locks[collection] = mu
	}

	return mu
}

// writeCommandTarget reports whether msg is an OP_MSG whose command (the first key
// of its body section) is one of writeCommands, and the collection it names (the command's
// string value; "" when it is not a string, which then shares one lock).
func writeCommandTarget(msg []byte) (string, bool) {
	if len(msg) < msgHeaderLen+4 || binary.LittleEndian.Uint32(msg[12:16]) != opCodeMsg {
		return "", false
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
			return "", false
		}

		size := int(int32(binary.LittleEndian.Uint32(msg[pos : pos+4])))
		if size < 5 || pos+size > end {
			return "", false
		}

		if kind == 0 {
			// BSON document: int32 size, then elements: type byte, cstring key, value.
			doc := msg[pos : pos+size]
			if doc[4] == 0 {
				return "", false
			}

			key := doc[5:]
			for i, b := range key {
				if b == 0 {
					if !writeCommands[string(key[:i])] {
						return "", false
					}

					return bsonString(doc[4], key[i+1:]), true
				}
			}

			return "", false
		}

		// kind 1: document sequence (int32 size includes itself); skip it.
		pos += size
	}

	return "", false
}

// bsonString decodes a BSON string element's value (int32 length including the final NUL, then
// the bytes); "" for any other type or a malformed value.
func bsonString(typ byte, value []byte) string {
	const bsonTypeString = 0x02
	if typ != bsonTypeString || len(value) < 5 {
		return ""
	}

	n := int(int32(binary.LittleEndian.Uint32(value[0:4])))
	if n < 1 || 4+n > len(value) {
		return ""
	}

	return string(value[4 : 4+n-1])
}
