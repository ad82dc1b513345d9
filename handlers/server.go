// Package handlers is boxoffice's HTTP layer: the route table, middleware,
// the one error handler that maps error codes to statuses, and handlers that
// parse a request, authorize it, call one store or domain method and render a
// templ view or JSON (CONTRACT.md).
package handlers

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/static"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
	"github.com/prometheus/client_golang/prometheus"
)

// MaxBodyBytes is the largest request body accepted (413 above it); seat-map
// imports have their own, larger limit.
const MaxBodyBytes = 64 << 10

// Pinger reports whether a backing service answers; /readyz asks each.
type Pinger interface {
	Ping(ctx context.Context) error
}

// EventReader returns an event, possibly a moment old (store.EventCache).
type EventReader interface {
	Event(ctx context.Context, id int64) (*boxoffice.Event, error)
	// Forget drops the copy of an event, after an admin changed it.
	Forget(id int64)
}

// Server holds what the handlers need. Set the fields, then call Handler.
type Server struct {
	Logger   *slog.Logger
	Sessions *scs.SessionManager
	Accounts boxoffice.AccountService
	Events   boxoffice.EventService
	// LiveEvents serves the hot paths of a sale (join, seat map, holds) from
	// a short-lived copy of each event; of its seat counts they use only
	// Event.SeatStatus's sold-out, which live holds do not change (a seat
	// held in Redis moves from left to held). The binary gives it the
	// EventPages cache, so that one read of the counts serves both.
	LiveEvents EventReader
	// EventPages serves the event's page, its JSON and the home page's
	// statuses from a short-lived copy of each event whose seat counts
	// include the live holds in Redis (store.EventCache with Holds): one
	// read per event and copy, shared by all readers.
	EventPages EventReader
	Queue      boxoffice.QueueService
	Holds      boxoffice.HoldService
	// TrustedProxies are the load balancers (TRUSTED_PROXIES) whose
	// X-Forwarded-For and X-Forwarded-Proto are believed: a request whose
	// peer is in one of them is taken to come from the last address in
	// X-Forwarded-For that is not (echo.ExtractIPFromXFFHeader), over https
	// when X-Forwarded-Proto says so; any other peer's headers are ignored.
	// Every per-address rule and log line uses the address so found, and
	// the cookies' Secure attribute the scheme (overHTTPSOnly). None (the
	// default) trusts no header: the peer is the client.
	TrustedProxies []*net.IPNet
	// Limiter enforces the rate limits on sign-up, log-in and joining; nil
	// turns them off (RATE_LIMITS=off, for load tests from one address).
	Limiter boxoffice.RateLimiter
	// Ready lists the services /readyz checks, by name.
	Ready map[string]Pinger
	// Metrics is the registry /metrics serves.
	Metrics *prometheus.Registry
	// Now returns the current time (time.Now when nil); tests fix it.
	Now func() time.Time
	// Unreachable reports whether an error says that PostgreSQL or Redis
	// could not be reached or went away, to answer 503 (store.Unreachable,
	// which knows the drivers' errors); nil means boxoffice.Unreachable.
	Unreachable func(error) bool
	// BodyTimeout is how long a request's body may take to arrive, from
	// the moment its headers were read (DefaultBodyTimeout when 0).
	BodyTimeout time.Duration
	// Stopping is cancelled when the server begins to shut down, so that
	// long-lived responses (SSE streams) end and the drain can finish.
	Stopping context.Context

	// Admin set-up (issue 3): venues and their seat maps.
	Venues boxoffice.VenueService

	// The waiting room's live positions (handlers/queue_stream.go).
	// AdmissionTick is the admitter's tick (boxoffice.DefaultAdmissionTick
	// when 0): once per tick each instance reads the positions of all its
	// SSE clients of an event in one Redis round trip.
	AdmissionTick time.Duration
	// ChallengeKey signs the proof-of-work challenges of joins (package
	// altcha); derived from SESSION_SECRET.
	ChallengeKey []byte
	// Draws keeps the pre-queues' draw seeds.
	Draws boxoffice.DrawSeeds
	// StreamsPerSession and StreamsPerAddress cap the waiting-room streams
	// open at once on this instance per session and per client address
	// (STREAMS_PER_SESSION, STREAMS_PER_ADDRESS; 0 is no cap): a stream
	// over a cap is refused with 429 rate_limited, and the page polls.
	StreamsPerSession int
	StreamsPerAddress int
	queueHub          *queueHub
	// Broadcasts are the admins' messages to an event's fans, shown in the
	// waiting room and on the seat map.
	Broadcasts boxoffice.BroadcastService
	// live shares the admin live page's figures per tick.
	live liveFigures

	// Seat map (issue 5): each event's seats, loaded once per process, and
	// its page, rendered and compressed once per event, version and language.
	seatMaps     seatMapCache
	seatMapPages seatMapPages

	// DefaultLang is the language of a visitor who states none (a tag of
	// views.Langs; DEFAULT_LANG): views.Korean when "".
	DefaultLang string

	// Checkout and payments: Orders creates and finds orders, Checkout
	// (package checkout) takes their payments at the PG.
	Orders   boxoffice.OrderService
	Checkout boxoffice.CheckoutService
	// Desk is the order desk's search and export (issue 16).
	Desk boxoffice.OrderDesk
	// Audit reads the audit log of every admin action (issue 16).
	Audit boxoffice.AuditLog
	// Refunds is the order desk's refunds (issue 16), and the refunds the
	// PG's webhooks report (package checkout).
	Refunds boxoffice.RefundService
	// Blocks is the seats admins hold back from the sale (issue 16).
	Blocks boxoffice.BlockService
	// SandboxPG, when set (PG_PROVIDER=sandbox), is mounted under /sandbox-pg.
	SandboxPG http.Handler
	// PGClientKey is PG_CLIENT_KEY with PG_PROVIDER=toss: GET
	// /payments/checkout opens Toss's payment window with it. "" (the
	// sandbox) leaves that route answering 404.
	PGClientKey string
	// CustomerKeySecret keys each account's customerKey at the PG
	// (boxoffice.CustomerKey): SESSION_SECRET.
	CustomerKeySecret []byte
	// PGCurrencies lists the ISO 4217 codes the PG takes
	// (PaymentGateway.Currencies): an event priced in another is refused.
	// nil takes any.
	PGCurrencies []string
}

// ipExtractor finds the client's address: the peer's, unless the peer is
// one of TrustedProxies, whose X-Forwarded-For is then read from the right,
// skipping the trusted proxies (and only those: loopback, link-local and
// private addresses are not trusted for being so).
func (s *Server) ipExtractor() echo.IPExtractor {
	if len(s.TrustedProxies) == 0 {
		return echo.ExtractIPDirect() // X-Forwarded-For is not trusted: anyone can send it
	}
	opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
	for _, n := range s.TrustedProxies {
		opts = append(opts, echo.TrustIPRange(n))
	}
	return echo.ExtractIPFromXFFHeader(opts...)
}

// Handler builds the route table and returns the HTTP handler.
func (s *Server) Handler() http.Handler {
	if s.Now == nil {
		s.Now = time.Now
	}
	if s.Stopping == nil {
		s.Stopping = context.Background()
	}
	s.queueHub = newQueueHub(s)
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.handleError
	e.IPExtractor = s.ipExtractor()
	s.Sessions.ErrorFunc = func(w http.ResponseWriter, r *http.Request, err error) {
		s.handleError(fmt.Errorf("%w (session store: %w)", errServiceDown, err), e.NewContext(r, w))
	}

	// Every request's middleware, composed once (handlers/routes.go). The
	// body's deadline comes first, ahead of anything that reads a body.
	e.Use(globalChain(s.bodyDeadline(), s.overHTTPSOnly, securityHeaders, s.language, s.recover, s.metricsMiddleware(),
		checkInputButImport(), crossOriginProtection()))
	e.GET("/healthz", handleHealthz)
	e.GET("/readyz", s.handleReadyz)
	e.GET("/metrics", s.metricsHandler())
	e.Match([]string{http.MethodGet, http.MethodHead}, "/static/*", staticFiles())
	e.Match([]string{http.MethodGet, http.MethodHead}, "/favicon.ico", echo.WrapHandler(http.FileServerFS(static.FS)))

	app := routes{e: e}.group("", s.loadSession, formOnly)
	app.GET("/", s.handleHome)
	app.GET("/events/:id", s.handleEvent)
	app.GET("/signup", s.handleSignupPage)
	app.POST("/signup", s.handleSignup, s.rateLimit(signupLimits))
	app.GET("/login", s.handleLoginPage)
	app.POST("/login", s.handleLogin, s.rateLimit(loginLimits))
	app.POST("/logout", s.handleLogout)
	app.POST("/lang", s.handleLang)

	// Admin set-up: venues, seat maps and events (issue 3). The seat-map
	// import has its own, larger body limit, applied once requireAdmin let
	// the request through (checkInputButImport).
	admin := app.group("/admin", requireAdmin)
	admin.GET("", s.handleAdmin)
	admin.GET("/venues", s.handleAdminVenues)
	admin.GET("/venues/new", s.handleAdminVenueNew)
	admin.POST("/venues", s.handleAdminVenueGenerate)
	admin.POST(strings.TrimPrefix(seatMapImportPath, "/admin"), s.handleAdminVenueImport, checkInput(maxSeatMapUploadBytes))
	admin.GET("/venues/:id", s.handleAdminVenue)
	admin.GET("/venues/:id/seats.csv", s.handleAdminVenueSeatsCSV)
	admin.POST("/venues/:id/name", s.handleAdminVenueRename)
	admin.POST("/venues/:id/order", s.handleAdminVenueOrder)
	admin.POST("/venues/:id/delete", s.handleAdminVenueDelete)
	admin.GET("/events", s.handleAdminEvents)
	admin.GET("/events/new", s.handleAdminEventNew)
	admin.POST("/events", s.handleAdminEventCreate)
	admin.GET("/events/:id/edit", s.handleAdminEventEdit)
	admin.POST("/events/:id/edit", s.handleAdminEventUpdate)
	admin.POST("/events/:id/publish", s.handleAdminEventPublish)
	admin.POST("/events/:id/close", s.handleAdminEventClose)
	admin.POST("/events/:id/blocks", s.handleAdminEventBlocks)

	// The waiting room (issue 4): joining, the page, its status, its live
	// stream, the entry token's time left, and the admin's live page.
	app.POST("/events/:id/queue", s.handleQueueJoin, requireAccount, s.rateLimit(joinLimits))
	app.GET("/events/:id/queue", s.handleWaitingRoom, requireAccount)
	app.GET("/events/:id/queue/status", s.handleQueueStatus, requireAccount)
	app.GET("/events/:id/queue/stream", s.handleQueueStream, requireAccount)
	app.GET("/events/:id/entry", s.handleEntry, requireAccount)
	app.GET("/events/:id/draw", s.handleDraw)
	admin.GET("/events/:id/live", s.handleAdminLive)
	admin.GET("/orders", s.handleAdminOrders)
	admin.GET("/audit", s.handleAdminAudit)
	admin.GET("/events/:id/orders.csv", s.handleAdminOrdersCSV)
	admin.GET("/orders/:order", s.handleAdminOrder)
	admin.POST("/orders/:order/refund", s.handleAdminOrderRefund)
	admin.POST("/events/:id/admission", s.handleAdminAdmission)
	admin.POST("/events/:id/broadcast", s.handleAdminBroadcast)

	// Seat map and holds (issue 5): an entry token of this session needed,
	// checked by the store in the same Redis step as the action.
	gzip := oneVary(middleware.GzipWithConfig(middleware.GzipConfig{Level: 1, MinLength: 4 << 10}))
	gzipButShared := oneVary(middleware.GzipWithConfig(middleware.GzipConfig{Level: 1, MinLength: 4 << 10, Skipper: sharesSeatMapPage}))
	app.GET("/events/:id/seats", s.handleSeatMap, gzipButShared, requireAccount)
	app.GET("/events/:id/seats/status", s.handleSeatStatus, gzip, requireAccount)
	app.POST("/events/:id/holds", s.handleHold, requireAccount)
	app.DELETE("/events/:id/holds/:seat", s.handleRelease, requireAccount)
	app.POST("/events/:id/holds/:seat/release", s.handleRelease, requireAccount)
	app.POST("/events/:id/leave", s.handleLeave, requireAccount)

	// Checkout and payments: orders, the PG's redirects and webhook, tickets.
	app.POST("/events/:id/orders", s.handleCreateOrder, s.requireEntry)
	app.GET("/orders/:order", s.handleOrder, requireAccount)
	app.GET("/orders/:order/tickets/:ticket/qr.png", s.handleTicketQR, requireAccount)
	app.GET("/me/orders", s.handleMyOrders, requireAccount)
	app.GET("/payments/checkout", s.handleCheckout, requireAccount)
	app.GET("/payments/success", s.handlePaymentSuccess)
	app.GET("/payments/fail", s.handlePaymentFail, requireAccount)
	e.POST("/payments/webhook", s.handleWebhook)
	if s.SandboxPG != nil {
		e.Any("/sandbox-pg/*", echo.WrapHandler(http.StripPrefix("/sandbox-pg", s.SandboxPG)))
	}
	return e
}
