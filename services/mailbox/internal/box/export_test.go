package box

// Collectors is how many collections wait on this replica for id's answer,
// for tests that must act once one waits.
func (b *Box) Collectors(id string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	if s := b.slots[id]; s != nil {
		return s.collectors
	}
	return 0
}
