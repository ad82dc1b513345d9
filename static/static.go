// Package static embeds the site's CSS and scripts: Pico CSS, htmx 2 and its
// SSE extension, the ALTCHA proof-of-work widget (altcha@1.5.1, MIT; all
// vendored from the npm registry by scripts/vendor.sh at the versions pinned
// there) and boxoffice's own app.css.
package static

import "embed"

// FS holds the static files, served under /static/.
//
//go:embed *.css *.js *.ico
var FS embed.FS
