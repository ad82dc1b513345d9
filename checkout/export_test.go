package checkout

// SetJoining makes f run whenever a Confirm of s starts waiting for another
// call for the same order and payment.
func SetJoining(s *Service, f func(orderID, paymentKey string)) { s.joining = f }
