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
// the lines still queued. The queue holds at most auditMaxQueued bytes of
// arguments: past that, a line keeps the arguments' size but not their
// text, and the writer is woken at once.
type auditLog struct {
	path    string
	maxSize int64
	logger  *slog.Logger

	mu          sync.Mutex
	queued      []auditRecord
	queuedBytes int
	spare       []auditRecord // the last batch, emptied, for queued to reuse
	closed      bool
	stop        chan struct{}
	done        chan struct{}
	wake        chan struct{}

	// Owned by the writer goroutine.
	f    *os.File
	w    *bufio.Writer
	size int64
	line bytes.Buffer
	enc  *json.Encoder // encodes into line
}

const (
	auditKeep      = 3
	auditInterval  = 200 * time.Millisecond
	auditMaxQueued = 4 << 20
)

func openAuditLog(path string, maxSize int64, logger *slog.Logger) (*auditLog, error) {
	if maxSize <= 0 {
		maxSize = 10 << 20
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	a := &auditLog{path: path, maxSize: maxSize, logger: logger, stop: make(chan struct{}), done: make(chan struct{}),
		wake: make(chan struct{}, 1)}
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

// append queues a finished call, as kept by the manager.
func (a *auditLog) append(c Call) {
	rec := auditRecord{Call: c, ResultBytes: len(c.ResultJSON)}
	if c.ResultTruncated {
		rec.ResultBytes = c.ResultSize
	}
	rec.ResultJSON, rec.ResultTruncated, rec.ResultSize = nil, false, 0
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return
	}
	if a.queuedBytes+len(rec.ArgumentsJSON) > auditMaxQueued {
		rec.Call = rec.Call.Stripped()
		select {
		case a.wake <- struct{}{}:
		default:
		}
	}
	a.queuedBytes += len(rec.ArgumentsJSON)
	a.queued = append(a.queued, rec)
}

func (a *auditLog) run() {
	defer close(a.done)
	tick := time.NewTicker(auditInterval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			a.flush()
		case <-a.wake:
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
	a.queued, a.queuedBytes = a.spare, 0
	a.mu.Unlock()
	if len(batch) == 0 || a.w == nil {
		return
	}
	for i := range batch {
		a.write(&batch[i])
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

// auditRecord is what the audit keeps of a call: what the manager keeps
// (arguments up to KeptSize bytes, see Call) but the result, whose whole
// size it records instead.
type auditRecord struct {
	Call
	ResultBytes int `json:"resultBytes"`
}

func (a *auditLog) write(rec *auditRecord) {
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
		a.logger.Warn("audit log not written", "error", err.Error(), "call", rec.ID)
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
