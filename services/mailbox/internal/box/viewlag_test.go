package box

import (
	"testing"
	"time"
)

// A write the view has not heard for viewStalledAfter marks the view
// stalled, once; a view that heard it, or is merely a moment behind, is
// not.
func TestAViewIsStalledWhenItDoesNotHearAWriteInTime(t *testing.T) {
	var l viewLag
	t0 := time.Unix(1000, 0)
	l.wrote(5, t0)
	l.wrote(7, t0.Add(time.Second))
	if l.stalled(t0.Add(viewStalledAfter - time.Millisecond)) {
		t.Fatal("stalled before viewStalledAfter passed")
	}
	l.heardUpTo(5) // still behind: the wait counts from the first write it fell behind on
	if !l.stalled(t0.Add(viewStalledAfter)) {
		t.Fatal("not stalled with write 7 unheard for viewStalledAfter")
	}
	if l.stalled(t0.Add(10 * viewStalledAfter)) {
		t.Fatal("stalled again with no write since the view was opened anew")
	}
	l.wrote(9, t0.Add(20*time.Second))
	l.heardUpTo(9)
	if l.stalled(t0.Add(time.Minute)) {
		t.Fatal("stalled though the view heard every write")
	}
}
