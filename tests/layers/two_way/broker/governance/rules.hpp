// ... and governance -> api: a two-way dependency the check must refuse.
#include "broker/api/api.hpp"
