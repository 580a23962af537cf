"""Placeholder: this page is being built."""

import streamlit as st

st.title("proactive_passive")
st.info("This page is not built yet.")
