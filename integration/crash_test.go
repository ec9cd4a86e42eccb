package integration

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	nexusv1 "github.com/nexuscocreate/nexus/proto/nexus/v1"
)

// TestKillDuringWriteStorm kills nexusd with SIGKILL at a random moment of a
// storm of writes from 8 concurrent writers (whose writes the store commits
// in groups that share their fsyncs), 50 times on one workspace. After
// every kill the repository passes git fsck --full as the crash left it,
// the daemon opens it again, git fsck still passes, and every write that
// was acknowledged is in the history with the content that was sent.
func TestKillDuringWriteStorm(t *testing.T) {
	rounds := 50
	if testing.Short() {
		rounds = 5
	}
	ws := newWorkspace(t, "")
	type write struct{ path, content string }
	acked := map[string]write{} // revision → write
	latest := map[string]string{}
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range rounds {
		d := startDaemon(t, ws)
		cf := d.framework()
		admin := as(d.admin)
		// Every acknowledged write of the rounds before is still there.
		for rev, w := range acked {
			got, err := cf.GetDefinitionFileContent(admin, &nexusv1.GetDefinitionFileContentRequest{Path: w.path, Revision: rev})
			if err != nil || got.Content != w.content {
				t.Fatalf("round %d: acknowledged write %s of %s lost: %v %v", round, rev[:12], w.path, got, err)
			}
		}
		// The newest content of each path is its last acknowledged write,
		// or a write that was under way when the daemon died.
		for path, content := range latest {
			got, err := cf.GetDefinitionFileContent(admin, &nexusv1.GetDefinitionFileContentRequest{Path: path})
			if err != nil {
				t.Fatalf("round %d: %s: %v", round, path, err)
			}
			if got.Content != content && !strings.HasPrefix(got.Content, path+" round ") {
				t.Fatalf("round %d: %s holds %q, last acknowledged %q", round, path, got.Content, content)
			}
		}
		var mu sync.Mutex
		var wg sync.WaitGroup
		firstAck := make(chan struct{})
		var once sync.Once
		for w := range 8 {
			wg.Go(func() {
				for i := 0; ; i++ {
					path := fmt.Sprintf("storm/w%d/f%d.md", w, i%5)
					content := fmt.Sprintf("%s round %d write %d\n%s", path, round, i, strings.Repeat("x", i%300))
					r, err := cf.SetDefinitionFileContent(admin, &nexusv1.SetDefinitionFileContentRequest{Path: path, Content: content})
					if err != nil {
						return // the daemon died
					}
					mu.Lock()
					acked[r.Revision] = write{path, content}
					latest[path] = content
					mu.Unlock()
					once.Do(func() { close(firstAck) })
				}
			})
		}
		go func() { // writers that all failed before an acknowledgement
			wg.Wait()
			once.Do(func() { close(firstAck) })
		}()
		// A random moment once the storm is under way, not an assertion.
		<-firstAck
		time.Sleep(time.Duration(rng.IntN(120)) * time.Millisecond)
		d.kill()
		wg.Wait()
		if out := git(t, ws, "fsck", "--full", "--strict", "--no-dangling"); out != "" {
			t.Fatalf("round %d: git fsck after the kill: %s", round, out)
		}
	}
	// After a clean stop: git fsck is not safe while the daemon may be
	// merging packs, no more than while git repack runs.
	d := startDaemon(t, ws)
	d.stop()
	if out := git(t, ws, "fsck", "--full", "--strict", "--no-dangling"); out != "" {
		t.Fatalf("git fsck after recovery: %s", out)
	}
	if len(acked) < rounds {
		t.Errorf("only %d writes acknowledged in %d rounds", len(acked), rounds)
	}
	commits := strings.TrimSpace(git(t, ws, "rev-list", "--count", "main"))
	updates := len(strings.Split(strings.TrimSpace(git(t, ws, "reflog", "main")), "\n"))
	t.Logf("%d rounds, %d acknowledged writes, all present; %s commits in %d ref updates", rounds, len(acked), commits, updates)
	if entries, _ := os.ReadDir(ws + "/.nexus/history.git/nexus-tmp"); len(entries) != 0 {
		t.Errorf("temporary files left after recovery: %d", len(entries))
	}
}
