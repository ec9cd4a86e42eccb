package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nexuscocreate/nexus/access"
	"github.com/nexuscocreate/nexus/internal/durable"
	"github.com/nexuscocreate/nexus/llm"
)

// A session is saved as .nexus/sessions/<id>.jsonl, one JSON record a
// line, appended as the session goes and synced to disk when each prompt
// ends (and at /compact, /clear and the like). Its first line is the
// header; loading replays the rest into a new history, so the pruned
// history is what it was. A torn last line (a crash mid-write) is left
// out. The records:
//
//	{"type":"session","version":1,"id":"…","created":"…","owner":"…","appId":"…","profile":"…"}
//	{"type":"title","title":"…"}
//	{"type":"message","message":{"role":"user","text":"…"}}        (see History's JSON form)
//	{"type":"usage","usage":{"inputTokens":…,"outputTokens":…},"profile":"…"}
//	{"type":"profile","profile":"…"}                                 /model
//	{"type":"clear"}                                                  /clear
//	{"type":"compact","message":{…summary…},"keep":N}                 /compact ("trigger":"auto": context.autoCompact)
//	{"type":"drop","dropped":N}                                       the N oldest messages pruned by context.autoCompact
//	{"type":"plan","plan":[{"content":"…","priority":"medium","status":"…"}]}  update_plan
//	{"type":"task","task":{"callId":"…","agent":"…","messages":[…],…}}        a subagent's transcript
type record struct {
	Type    string     `json:"type"`
	Time    time.Time  `json:"time,omitzero"`
	Version int        `json:"version,omitempty"`
	ID      string     `json:"id,omitempty"`
	Created time.Time  `json:"created,omitzero"`
	Owner   string     `json:"owner,omitempty"`
	AppID   string     `json:"appId,omitempty"`
	Profile string     `json:"profile,omitempty"`
	Title   string     `json:"title,omitempty"`
	Message *Message   `json:"message,omitempty"`
	Usage   *llm.Usage `json:"usage,omitempty"`
	Keep    int        `json:"keep,omitempty"`
	// Trigger is a compact record's: "auto" for context.autoCompact's
	// (none: /compact).
	Trigger string `json:"trigger,omitempty"`
	// Dropped is a drop record's: how many of the oldest messages an
	// automatic compaction pruned (History.Drop replays it).
	Dropped int `json:"dropped,omitempty"`
	// Plan is the whole plan of a "plan" record (none: cleared).
	Plan []PlanEntry `json:"plan,omitempty"`
	// Task is a subagent's transcript, written when it ends.
	Task *taskRecord `json:"task,omitempty"`
}

const sessionVersion = 1

type sessionLog struct {
	f     *os.File
	buf   bytes.Buffer
	dirty bool
	// dir, when set, is synced with the first sync: the new file's entry.
	dir string
}

func (l *sessionLog) append(r record) error {
	l.buf.Reset()
	if err := json.NewEncoder(&l.buf).Encode(r); err != nil {
		return err
	}
	_, err := l.f.Write(l.buf.Bytes())
	l.dirty = true
	return err
}

func (l *sessionLog) sync() error {
	if !l.dirty {
		return nil
	}
	l.dirty = false
	if err := l.f.Sync(); err != nil {
		return err
	}
	if l.dir != "" {
		if err := durable.SyncDir(l.dir); err != nil {
			return err
		}
		l.dir = ""
	}
	return nil
}

func (l *sessionLog) close() error {
	return errors.Join(l.sync(), l.f.Close())
}

func (s *Service) sessionPath(id string) string {
	return filepath.Join(s.opts.Layout.Sessions, id+".jsonl")
}

// create writes the session's file with its header. It is made durable
// with the first prompt's end (the file and its directory entry): a
// session that never ran loses nothing in a crash, and starting one costs
// no fsync before the first answer.
func (ss *Session) create() error {
	f, err := os.OpenFile(ss.svc.sessionPath(ss.id), os.O_WRONLY|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	ss.log = &sessionLog{f: f, dir: ss.svc.opts.Layout.Sessions}
	err = ss.log.append(record{Type: "session", Version: sessionVersion, ID: ss.id, Created: ss.created,
		Owner: ss.owner.Author(), AppID: ss.owner.AppID(), Profile: ss.profile.Name})
	if err != nil {
		ss.log.close()
		os.Remove(f.Name())
		return err
	}
	return nil
}

// logLocked appends a record; a failure is logged, and the prompt goes on
// (the conversation in memory is whole).
func (ss *Session) logLocked(r record) {
	if ss.task != nil {
		// A subagent's transcript goes to its parent's file when it ends.
		if r.Type == "message" && r.Message != nil {
			ss.task.msgs = append(ss.task.msgs, *r.Message)
		}
		return
	}
	if ss.log == nil {
		return
	}
	r.Time = ss.svc.opts.Now().UTC()
	if err := ss.log.append(r); err != nil {
		ss.svc.logger.Warn("agent session: write failed", "session", ss.id, "error", err.Error())
	}
}

func (ss *Session) syncLocked() error {
	if ss.log == nil {
		return nil
	}
	return ss.log.sync()
}

// transcript reads the messages of a session's file since its last /clear
// (a torn last line is left out), and its subagents' transcripts by the
// call of the task tool that started each.
func (s *Service) transcript(id string) ([]Message, map[string]*taskRecord, error) {
	f, err := os.Open(s.sessionPath(id))
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	var msgs []Message
	tasks := map[string]*taskRecord{}
	for sc.Scan() {
		var r record
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			continue
		}
		switch {
		case r.Type == "message" && r.Message != nil:
			msgs = append(msgs, *r.Message)
		case r.Type == "task" && r.Task != nil:
			tasks[r.Task.CallID] = r.Task
		case r.Type == "clear":
			msgs = msgs[:0]
			clear(tasks)
		}
	}
	return msgs, tasks, sc.Err()
}

// loadSessions reads every saved session. A file that cannot be read is
// logged and left alone, never removed.
func loadSessions(s *Service) ([]*Session, error) {
	entries, err := os.ReadDir(s.opts.Layout.Sessions)
	if err != nil {
		return nil, err
	}
	var out []*Session
	for _, e := range entries {
		id, ok := strings.CutSuffix(e.Name(), ".jsonl")
		if !ok || e.IsDir() {
			continue
		}
		ss, err := s.loadSession(id)
		if err != nil {
			s.logger.Warn("agent session not loaded", "file", s.sessionPath(id), "error", err.Error())
			continue
		}
		out = append(out, ss)
	}
	return out, nil
}

func (s *Service) loadSession(id string) (*Session, error) {
	f, err := os.OpenFile(s.sessionPath(id), os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return nil, err
	}
	ss, err := s.replayFile(id, f)
	if err != nil {
		f.Close()
		return nil, err
	}
	ss.log = &sessionLog{f: f}
	return ss, nil
}

func (s *Service) replayFile(id string, f *os.File) (*Session, error) {
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 64<<20)
	var ss *Session
	n := 0
	for sc.Scan() {
		n++
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			// A torn last line of a crash: what came before is whole.
			if !sc.Scan() {
				s.logger.Warn("agent session: a torn last record is left out", "session", id, "line", n)
				break
			}
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
		if ss == nil {
			if r.Type != "session" || r.Version != sessionVersion || r.ID != id {
				return nil, fmt.Errorf("line 1 is not a version %d header of session %s", sessionVersion, id)
			}
			owner := access.Person(r.Owner)
			if r.AppID != "" {
				owner = s.appParty(r.AppID)
			}
			var err error
			if ss, err = s.restoredSession(id, owner, r.Profile, r.Created); err != nil {
				return nil, err
			}
			continue
		}
		if err := ss.apply(r); err != nil {
			return nil, fmt.Errorf("line %d: %w", n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if ss == nil {
		return nil, errors.New("empty session file")
	}
	return ss, nil
}

// appParty is the party of an app by id, as the config grants it now.
func (s *Service) appParty(id string) access.Party {
	if s.opts.App != nil {
		if a := s.opts.App(id); a != nil {
			return access.ForApp(a)
		}
	}
	// An app no longer configured: it has its own root only.
	return access.ForApp(&access.App{ID: id})
}

// restoredSession is a saved session before its records are applied. Its
// adapter is made when it is first prompted, so that a missing key does
// not hide the saved sessions.
func (s *Service) restoredSession(id string, owner access.Party, profile string, created time.Time) (*Session, error) {
	p, err := s.profile(profile)
	if err != nil {
		// The profile is gone from the config: show the session with the
		// default one.
		if p, err = s.profile(""); err != nil {
			p = llm.Profile{Name: profile}
		}
	}
	hopts, err := s.historyOptions(p)
	if err != nil {
		hopts = HistoryOptions{MaxLength: s.opts.Config.Messages.MaxLength, KeepSystem: s.opts.Config.Messages.KeepSystem}
	}
	hist, err := NewHistory(hopts)
	if err != nil {
		return nil, err
	}
	return &Session{svc: s, id: id, owner: owner, party: owner.Agent(id), created: created, updated: created,
		profile: p, hist: hist}, nil
}

// apply replays one record of the file.
func (ss *Session) apply(r record) error {
	if !r.Time.IsZero() {
		ss.updated = r.Time
	}
	switch r.Type {
	case "title":
		ss.title = r.Title
	case "message":
		if r.Message == nil {
			return errors.New("message record without a message")
		}
		if _, err := ss.hist.Add(*r.Message); err != nil {
			return err
		}
		if r.Message.Role == RoleUser {
			ss.turn++
		}
		if res := r.Message.Result; res != nil && !res.IsError {
			if c, ok := ss.callOf(res.CallID); ok && c.Server == "" {
				ss.workedIn(c.Name, c.Arguments)
			}
		}
	case "usage":
		if r.Usage != nil {
			prices := ss.profile.Prices
			if r.Profile != "" && r.Profile != ss.profile.Name {
				// A subagent's request, at its own profile.
				if p, err := ss.svc.profile(r.Profile); err == nil {
					prices = p.Prices
				}
			}
			ss.addUsageLocked(*r.Usage, prices)
		}
	case "profile":
		if p, err := ss.svc.profile(r.Profile); err == nil {
			ss.profile = p
		}
	case "clear":
		ss.hist.Clear()
		ss.dirs = nil
		ss.plan = nil
	case "plan":
		ss.plan = r.Plan
	case "task":
		// A subagent's transcript: kept in the file, never run again nor
		// added to the parent's history (its answer is there already).
	case "compact":
		if r.Message == nil {
			return errors.New("compact record without a summary")
		}
		ss.hist.Replace(*r.Message, r.Keep)
	case "drop":
		ss.hist.Drop(r.Dropped)
	default:
		return fmt.Errorf("unknown record type %q", r.Type)
	}
	return nil
}
