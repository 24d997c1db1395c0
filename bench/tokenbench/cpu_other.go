//go:build !unix

package main

import "time"

// cpuTime is unknown on this platform: the table leaves CPU columns empty.
func cpuTime() time.Duration { return 0 }
