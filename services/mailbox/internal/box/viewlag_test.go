package box

import (
	"testing"
	"time"
)

// A view that hears nothing for viewStalledAfter while a write of this
// replica waits, or after a record read whole was newer, is stalled,
// once; one that heard it, or is behind but moving, is not.
func TestAViewIsStalledWhenItHearsNothingWhileBehind(t *testing.T) {
	var l viewLag
	t0 := time.Unix(1000, 0)
	l.heardUpTo(3, t0)
	l.wrote(5, t0)
	l.wrote(7, t0.Add(time.Second))
	if l.stalled(t0.Add(viewStalledAfter - time.Millisecond)) {
		t.Fatal("stalled before viewStalledAfter passed")
	}
	l.heardUpTo(5, t0.Add(2*time.Second)) // behind, but moving
	if l.stalled(t0.Add(viewStalledAfter + time.Second)) {
		t.Fatal("stalled though the view moved on a second ago")
	}
	if !l.stalled(t0.Add(2*time.Second + viewStalledAfter)) {
		t.Fatal("not stalled with write 7 unheard and nothing heard for viewStalledAfter")
	}
	if l.stalled(t0.Add(10 * viewStalledAfter)) {
		t.Fatal("stalled again with no write since the view was opened anew")
	}
	l.wrote(9, t0.Add(time.Minute))
	l.heardUpTo(9, t0.Add(time.Minute))
	if l.stalled(t0.Add(2 * time.Minute)) {
		t.Fatal("stalled though the view heard every write")
	}

	// A replica that writes nothing: a record read newer than its view.
	l.readNewer()
	if !l.stalled(t0.Add(2 * time.Minute)) {
		t.Fatal("not stalled after a record read newer and nothing heard for a minute")
	}
	l.heardUpTo(12, t0.Add(3*time.Minute))
	l.readNewer()
	if l.stalled(t0.Add(3*time.Minute + time.Second)) {
		t.Fatal("stalled though the view heard something a second ago")
	}
}
