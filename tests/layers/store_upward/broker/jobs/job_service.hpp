// Fixture: a service.
#pragma once
