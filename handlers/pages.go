package handlers

import (
	"context"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"time"

	"github.com/boxoffice/boxoffice"
	"github.com/boxoffice/boxoffice/static"
	"github.com/boxoffice/boxoffice/views"
	"github.com/labstack/echo/v4"
)

// handleHome handles GET /: the events on sale and coming up.
func (s *Server) handleHome(c echo.Context) error {
	events, err := s.Events.FindEvents(c.Request().Context(), boxoffice.EventFilter{
		Statuses: []string{boxoffice.EventOnSale},
		Upcoming: true,
	})
	if err != nil {
		return err
	}
	for i, e := range events {
		if e.QueueOpen(s.Now()) {
			if events[i], err = s.EventPages.Event(c.Request().Context(), e.ID); err != nil {
				return err
			}
		}
	}
	if wantsJSON(c) {
		lang := views.Lang(c.Request().Context())
		out := make([]map[string]any, 0, len(events))
		for _, e := range events {
			out = append(out, map[string]any{
				"id": e.ID, "title": e.Title.In(lang), "venue": e.VenueName, "starts_at": e.StartsAt,
				"queue_opens_at": e.QueueOpensAt, "sale_ends_at": e.SaleEndsAt, "status": e.SeatStatus(),
			})
		}
		return answerJSON(c, http.StatusOK, map[string]any{"events": out})
	}
	return render(c, http.StatusOK, views.Home(events, s.Now()))
}

// handleHealthz handles GET /healthz: 200 while the process runs.
func handleHealthz(c echo.Context) error {
	return c.String(http.StatusOK, "ok")
}

// handleReadyz handles GET /readyz: 200 when every service answers within a
// second, 503 naming the ones that do not.
func (s *Server) handleReadyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), time.Second)
	defer cancel()
	down := map[string]string{}
	for name, p := range s.Ready {
		if err := p.Ping(ctx); err != nil {
			down[name] = err.Error()
		}
	}
	if len(down) > 0 {
		return answerJSON(c, http.StatusServiceUnavailable, map[string]any{"status": "unavailable", "down": down})
	}
	return answerJSON(c, http.StatusOK, map[string]any{"status": "ready"})
}

// staticFiles serves the embedded CSS, scripts and favicon (GET and HEAD),
// cached for a day: their content changes only with a deploy. A directory
// is not a file: /static/ answers 404, not a listing.
func staticFiles() echo.HandlerFunc {
	files := http.StripPrefix("/static", http.FileServerFS(static.FS))
	return func(c echo.Context) error {
		name := path.Clean(strings.TrimPrefix(c.Request().URL.Path, "/static/"))
		if info, err := fs.Stat(static.FS, name); err != nil || info.IsDir() {
			return echo.ErrNotFound
		}
		c.Response().Header().Set("Cache-Control", "public, max-age=86400")
		files.ServeHTTP(c.Response(), c.Request())
		return nil
	}
}
