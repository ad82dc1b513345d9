package store

// SetBeforeCommit makes the confirmation transaction call f just before it
// commits, so that tests can hold it open.
func SetBeforeCommit(s *Orders, f func(orderID, paymentKey string)) { s.beforeCommit = f }
