// A service reaching the store through another service: refused (rule 4).
#include "broker/jobs/job_service.hpp"

void discard_dead(ojs::broker::JobService& jobs, const std::string& id) { jobs.store().forget(id); }
