package inflight

import "testing"

// Past MaxNotes the oldest note goes, but a question and its answer mark
// stay while any other note can go instead: a dropped question could not
// be answered.
func TestAddNoteKeepsQuestionsAndAnswersPastTheBound(t *testing.T) {
	notes, _ := AddNote(nil, Note{Question: &Question{ID: "q1", Method: "elicitation/create", Params: "{}"}})
	notes, _ = AddNote(notes, Note{Answered: "q1"})
	var seq int64
	for i := range MaxNotes + 3 {
		notes, seq = AddNote(notes, Note{Progress: float64(i)})
	}
	if len(notes) != MaxNotes || seq != MaxNotes+5 {
		t.Fatalf("%d notes, the last numbered %d; want %d, numbered %d", len(notes), seq, MaxNotes, MaxNotes+5)
	}
	if q, answered := Asked(notes, "q1"); q == nil || !answered || AskedBy(notes, 0) != 1 {
		t.Errorf("Asked(q1) = %v, %v, %d asked; want the question kept, answered", q, answered, AskedBy(notes, 0))
	}
	if first := notes[2]; first.Progress != 5 {
		t.Errorf("the oldest progress note kept is %v; want 5 (the five before it dropped)", first.Progress)
	}
}
