package checkpoints

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkScan measures a scan of an unchanged workspace of 10,000 files.
func BenchmarkScan(b *testing.B) {
	files := map[string]string{".gitignore": ".nexus/\n"}
	for i := range 10_000 {
		files[fmt.Sprintf("src/pkg%03d/file%05d.go", i/100, i)] = strings.Repeat("x", 100)
	}
	e := newEnv(b, files)
	<-e.s.scan.ready
	sc := e.s.scan
	sc.lock()
	defer sc.unlock()
	sc.margin = 0 // the files are new: trust their stat
	for b.Loop() {
		res, err := sc.walk(sc.base)
		if err != nil {
			b.Fatal(err)
		}
		sc.base = res.entries
	}
}
