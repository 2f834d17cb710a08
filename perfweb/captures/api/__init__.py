"""The REST API (Django REST framework, OpenAPI schema by drf-spectacular): the same
objects and rules as the pages, for CI jobs, production hosts and the upload CLI."""
