package state

import "testing"

func TestFileDiff(t *testing.T) {
	got := FileDiff("a.txt", []byte("one\ntwo\n"), []byte("one\n2\n"))
	want := "diff --git a/a.txt b/a.txt\nindex 814f4a4..99b356d 100644\n--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n one\n-two\n+2\n"
	if got != want {
		t.Errorf("FileDiff:\n%s\nwant\n%s", got, want)
	}
	if FileDiff("new", nil, []byte("x\n")) == "" || FileDiff("same", []byte("x"), []byte("x")) != "" {
		t.Error("FileDiff of an added file is empty, or of an unchanged one is not")
	}
}
