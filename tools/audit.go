package tools

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// auditLog appends one JSON line per finished call, rotating the file at a
// size limit and keeping three old files (name.1 newest … name.3).
type auditLog struct {
	path    string
	maxSize int64

	mu   sync.Mutex
	f    *os.File
	size int64
}

const auditKeep = 3

func openAuditLog(path string, maxSize int64) (*auditLog, error) {
	if maxSize <= 0 {
		maxSize = 10 << 20
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	a := &auditLog{path: path, maxSize: maxSize}
	if err := a.open(); err != nil {
		return nil, err
	}
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
	a.f, a.size = f, info.Size()
	return nil
}

func (a *auditLog) append(c Call) error {
	line, err := json.Marshal(c)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return os.ErrClosed
	}
	if a.size > 0 && a.size+int64(len(line)) > a.maxSize {
		if err := a.rotate(); err != nil {
			return err
		}
	}
	n, err := a.f.Write(line)
	a.size += int64(n)
	return err
}

func (a *auditLog) rotate() error {
	a.f.Close()
	a.f = nil
	for i := auditKeep - 1; i >= 1; i-- {
		os.Rename(fmt.Sprintf("%s.%d", a.path, i), fmt.Sprintf("%s.%d", a.path, i+1))
	}
	if err := os.Rename(a.path, a.path+".1"); err != nil {
		return err
	}
	return a.open()
}

func (a *auditLog) close() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.f == nil {
		return nil
	}
	err := a.f.Close()
	a.f = nil
	return err
}
