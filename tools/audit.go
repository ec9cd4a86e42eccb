package tools

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// auditLog appends one JSON line per finished call (see auditRecord), rotating the file at a
// size limit and keeping three old files (name.1 newest … name.3). Lines
// are written by a goroutine of their own, in batches, so that a call does
// not wait for the disk; Close writes what is queued. A crash loses at most
// the lines still queued.
type auditLog struct {
	path    string
	maxSize int64
	logger  *slog.Logger

	mu     sync.Mutex
	queued []Call
	spare  []Call // the last batch, emptied, for queued to reuse
	closed bool
	stop   chan struct{}
	done   chan struct{}

	// Owned by the writer goroutine.
	f    *os.File
	w    *bufio.Writer
	size int64
	line bytes.Buffer
	enc  *json.Encoder // encodes into line
}

const (
	auditKeep     = 3
	auditInterval = 200 * time.Millisecond
)

func openAuditLog(path string, maxSize int64, logger *slog.Logger) (*auditLog, error) {
	if maxSize <= 0 {
		maxSize = 10 << 20
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	a := &auditLog{path: path, maxSize: maxSize, logger: logger, stop: make(chan struct{}), done: make(chan struct{})}
	a.enc = json.NewEncoder(&a.line)
	if err := a.open(); err != nil {
		return nil, err
	}
	go a.run()
	return a, nil
}

func (a *auditLog) open() error {
	f, err := os.OpenFile(a.path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("audit log: %w", err)
	}
	info, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	a.f, a.w, a.size = f, bufio.NewWriterSize(f, 64<<10), info.Size()
	return nil
}

// append queues a finished call.
func (a *auditLog) append(c Call) {
	a.mu.Lock()
	if !a.closed {
		a.queued = append(a.queued, c)
	}
	a.mu.Unlock()
}

func (a *auditLog) run() {
	defer close(a.done)
	tick := time.NewTicker(auditInterval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			a.flush()
		case <-a.stop:
			a.flush()
			a.f.Close()
			return
		}
	}
}

// flush writes the queued calls.
func (a *auditLog) flush() {
	a.mu.Lock()
	batch := a.queued
	a.queued = a.spare
	a.mu.Unlock()
	if len(batch) == 0 || a.w == nil {
		return
	}
	for _, c := range batch {
		a.write(c)
	}
	clear(batch)
	a.mu.Lock()
	a.spare = batch[:0]
	a.mu.Unlock()
	if a.w != nil {
		if err := a.w.Flush(); err != nil {
			a.logger.Warn("audit log not written", "error", err.Error())
		}
	}
}

// auditRecord is what the audit keeps of a call: everything but the result,
// whose size it records instead, and arguments up to auditMaxArgs bytes.
type auditRecord struct {
	Call
	ResultJSON         json.RawMessage `json:"resultJson,omitempty"`
	ResultBytes        int             `json:"resultBytes"`
	ArgumentsTruncated bool            `json:"argumentsTruncated,omitempty"`
}

const auditMaxArgs = 64 << 10

func (a *auditLog) write(c Call) {
	rec := auditRecord{Call: c, ResultBytes: len(c.ResultJSON)}
	if len(c.ArgumentsJSON) > auditMaxArgs {
		head, _ := json.Marshal(string(c.ArgumentsJSON[:auditMaxArgs]))
		rec.ArgumentsJSON, rec.ArgumentsTruncated = head, true
	}
	a.line.Reset()
	if err := a.enc.Encode(rec); err != nil || a.w == nil { // Encode ends the line
		return
	}
	line := a.line.Bytes()
	if a.size > 0 && a.size+int64(len(line)) > a.maxSize {
		if err := a.rotate(); err != nil {
			a.logger.Warn("audit log not rotated", "error", err.Error())
			return
		}
	}
	n, err := a.w.Write(line)
	a.size += int64(n)
	if err != nil {
		a.logger.Warn("audit log not written", "error", err.Error(), "call", c.ID)
	}
}

func (a *auditLog) rotate() error {
	a.w.Flush()
	a.f.Close()
	a.f, a.w = nil, nil
	for i := auditKeep - 1; i >= 1; i-- {
		os.Rename(fmt.Sprintf("%s.%d", a.path, i), fmt.Sprintf("%s.%d", a.path, i+1))
	}
	if err := os.Rename(a.path, a.path+".1"); err != nil {
		return err
	}
	return a.open()
}

// close writes what is queued and closes the file.
func (a *auditLog) close() error {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	close(a.stop)
	<-a.done
	return nil
}
