package events

import (
	"errors"
	"testing"
)

func TestPublishFilters(t *testing.T) {
	b := New()
	evens := b.Subscribe(func(ev any) bool { return ev.(int)%2 == 0 }, 10)
	all := b.Subscribe(nil, 10)
	for i := range 4 {
		b.Publish(i)
	}
	evens.Close()
	var got []int
	for ev := range evens.C {
		got = append(got, ev.(int))
	}
	if len(got) != 2 || got[0] != 0 || got[1] != 2 {
		t.Errorf("evens got %v, want [0 2]", got)
	}
	if len(all.C) != 4 {
		t.Errorf("all has %d events, want 4", len(all.C))
	}
	if !errors.Is(evens.Err(), ErrClosed) {
		t.Errorf("Err() = %v, want ErrClosed", evens.Err())
	}
	if all.Err() != nil {
		t.Errorf("live subscription Err() = %v", all.Err())
	}
}

func TestSlowSubscriberIsDroppedNotBlocking(t *testing.T) {
	b := New()
	slow := b.Subscribe(nil, 2)
	fast := b.Subscribe(nil, 100)
	for i := range 10 {
		b.Publish(i)
	}
	n := 0
	for range slow.C {
		n++
	}
	if n != 2 || !errors.Is(slow.Err(), ErrOverflow) {
		t.Errorf("slow: %d events, err %v; want 2 and ErrOverflow", n, slow.Err())
	}
	if len(fast.C) != 10 || fast.Err() != nil {
		t.Errorf("fast: %d events, err %v; want 10 and nil", len(fast.C), fast.Err())
	}
	b.Close()
	if !errors.Is(fast.Err(), ErrClosed) {
		t.Errorf("after bus Close, Err() = %v", fast.Err())
	}
}

func TestAttachSeesEveryEventInOrder(t *testing.T) {
	b := New()
	if b.Listened() {
		t.Fatal("an empty bus is listened to")
	}
	var got []int
	detach := b.Attach(func(ev any) { got = append(got, ev.(int)) })
	if !b.Listened() {
		t.Fatal("an attached function does not count as a listener")
	}
	for i := range 10000 { // far beyond any subscription's buffer
		b.Publish(i)
	}
	detach()
	detach() // twice is harmless
	b.Publish(-1)
	if len(got) != 10000 || got[0] != 0 || got[9999] != 9999 {
		t.Fatalf("got %d events (first %d, last %d), want 10000 in order", len(got), got[0], got[len(got)-1])
	}
	if b.Listened() {
		t.Error("still listened to after detach")
	}
}
