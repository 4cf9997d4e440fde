# hops.awk: reads perf sched timehist -w (bench/reaction/run --sched) and
# prints, a kick a line, "round,kick,path_us,sched_delay_us,watch_us,
# sync_us,queue_us,apply_us": from the API server waking rs-watch for a
# delete's event (the first wake-up of rs-watch after gap ms without one)
# to the end of rs-apply's first run that follows rs-watch, rs-sync,
# rs-queue and rs-sync again (the chain that sends the create); the
# scheduling delay summed over our runs on the way, and each process's run
# time. A kick whose chain is not complete before the next one is left out.
#   awk -v round=N [-v gap=MS] -f hops.awk
# Run lines: TIME [CPU] TASK WAIT SCHDELAY RUNTIME (ms); wake-up lines:
# TIME [CPU] TASK awakened: TASK. Tasks are comm[tid] or comm[tid/pid].
function comm(t) { sub(/\[.*/, "", t); return t }
function ours(t) { t = comm(t); return t == "rs-watch" || t == "rs-sync" || t == "rs-queue" || t == "rs-apply" }
function begin(t) {
	t0 = t; step = 0; delay = 0
	run["rs-watch"] = run["rs-sync"] = run["rs-queue"] = run["rs-apply"] = 0
}
BEGIN { if (gap == "") gap = 20; gap /= 1000; last = -1; t0 = -1 }
$4 == "awakened:" {
	if (comm($5) != "rs-watch" || ours($3))
		next
	t = $1 + 0
	if (last < 0 || t - last > gap)
		begin(t)
	last = t
	next
}
t0 >= 0 && step < 5 && ours($3) && NF == 6 {
	end = $1 + 0; r = $6 / 1000
	if (end - r < t0)
		next
	c = comm($3)
	delay += $5 / 1000; run[c] += r
	if (c == "rs-watch" && step == 0) step = 1
	else if (c == "rs-sync" && (step == 1 || step == 3)) step++
	else if (c == "rs-queue" && step == 2) step = 3
	else if (c == "rs-apply" && step == 4) {
		step = 5
		printf "%s,%d,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f\n", round, ++kicks,
		    (end - t0) * 1e6, delay * 1e6, run["rs-watch"] * 1e6,
		    run["rs-sync"] * 1e6, run["rs-queue"] * 1e6, run["rs-apply"] * 1e6
	}
}
