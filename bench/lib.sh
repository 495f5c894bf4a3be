# SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
# Helpers shared by the bench/ scripts (sourced).

# wait_listen PORT [TRIES]: until a TCP listener is on PORT (50 ms a try)
wait_listen() {
	for _ in $(seq "${2:-100}"); do
		ss -Hltn "sport = :$1" | grep -q . && return 0
		sleep 0.05
	done
	echo "bench: server on port $1 did not start" >&2
	return 1
}
