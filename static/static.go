// Package static embeds the site's CSS and scripts: Pico CSS, htmx 2 and its
// SSE extension (vendored from the npm registry by scripts/vendor.sh at the
// versions pinned there) and boxoffice's own app.css.
package static

import "embed"

// FS holds the static files, served under /static/.
//
//go:embed *.css *.js *.ico
var FS embed.FS
