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
