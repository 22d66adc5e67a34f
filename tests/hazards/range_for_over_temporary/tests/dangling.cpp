// Loops scripts/check-range-for.py must refuse (never compiled): each walks a part
// of a temporary that dies before the loop body runs.
void loops() {
  for (const auto& d : beat(n, {a})["job_directives"]) told[n] = d;
  for (const auto& e : api.get("/ojs/v1/events").body["events"]) seen.push_back(e);
}
