package boxoffice

// SaleFigures are an event's seats and money during a sale, for the admin's
// live page (GET /admin/events/{id}/live). Every seat of the event is in
// exactly one of Sold, Blocked, Held and Free, in that order of precedence
// (a seat sold while its hold lingers is sold), so that
// Sold+Blocked+Held+Free is the event's number of seats, per grade and in
// total.
type SaleFigures struct {
	Sold    int // seats with a sold_seat row (confirmed orders, less refunded tickets)
	Blocked int // seats an admin held back (blocked_seat)
	Held    int // seats held in Redis (a live hold) or in an unpaid (PENDING_PAYMENT) order
	Free    int // the rest: seats a fan may hold now
	// Revenue is the prices of the sold seats in Currency's minor unit: what
	// confirmed orders paid, net of every refund applied.
	Revenue  int64
	Currency string
	Grades   []GradeFigures // by grade code
	// OrdersLastMinute counts the event's orders confirmed in the 60 s
	// before the figures were read (by the database's clock).
	OrdersLastMinute int
	// PaymentFailures counts the payments the confirmation refused: the
	// event's FAILED orders (amount not the order's) and its orders
	// REFUNDED without ever being confirmed (seats gone before a late
	// payment arrived, limit reached, order already paid).
	PaymentFailures int
	// Refunds counts the refunds applied to the event's orders (an admin's
	// or one made at the PG), each refund once however many tickets it has.
	Refunds int
}

// GradeFigures are SaleFigures' seats of one grade.
type GradeFigures struct {
	Code                      string
	Sold, Held, Free, Blocked int
}
